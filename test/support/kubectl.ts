/** Real kubectl 1.34 against a sandbox's kubeconfig, for the tests of what a kubectl user sees. */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { kubectlPath } from './tools.ts'

/** Runs `kubectl --kubeconfig <kubeconfig> …args` (with `input` on stdin); resolves to its stdout, rejects on a non-zero exit. */
export type Kubectl = (args: string[], input?: string) => Promise<string>

/** A {@link Kubectl} bound to one kubeconfig. */
export function kubectlFor(kubeconfig: string): Kubectl {
  return async (args, input) => {
    const run = promisify(execFile)(kubectlPath(), ['--kubeconfig', kubeconfig, ...args], { timeout: 60_000 })
    if (input !== undefined) run.child.stdin?.end(input)
    return (await run).stdout
  }
}
