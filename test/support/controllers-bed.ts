/** The sandbox with its simulated controllers, for the tests of those controllers. */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import type { Test } from 'tap'
import { startControllers } from '../../operator/sandbox/controllers/index.ts'
import { startSandbox, type Sandbox } from '../../operator/sandbox/index.ts'
import type { ApiRequest, ApiResponse, KubeObject } from '../../operator/sandbox/types.ts'
import { kubectlPath } from './tools.ts'

// Tests read arbitrary fields of what the server returns.
export type Obj = Record<string, any>
export type Req = Partial<ApiRequest> & Pick<ApiRequest, 'verb'>

export interface ControllersBed {
  sb: Sandbox
  controllers: { stop(): Promise<void> }
  /** A request to the cluster (core group, v1, unless given). */
  call(r: Req): Promise<ApiResponse>
  /** An object, or undefined when it does not exist. */
  get(resource: string, name: string, group?: string, namespace?: string): Promise<Obj | undefined>
  list(resource: string, group?: string, namespace?: string): Promise<Obj[]>
}

/** Starts a sandbox (with `crds` installed) and its controllers; both stop when `t` ends. */
export async function controllersBed(t: Test, opts: { podReadyDelayMs: number; resyncMs?: number; crds?: KubeObject[]; podTerminationMs?: number; hpaSyncPeriodMs?: number }): Promise<ControllersBed> {
  const sb = await startSandbox({ controllers: false, installCRDs: opts.crds ?? [], ...(opts.podTerminationMs !== undefined ? { podTerminationMs: opts.podTerminationMs } : {}) })
  const controllers = startControllers(sb.cluster, {
    podReadyDelayMs: opts.podReadyDelayMs,
    ...(opts.resyncMs !== undefined ? { resyncMs: opts.resyncMs } : {}),
    ...(opts.hpaSyncPeriodMs !== undefined ? { hpaSyncPeriodMs: opts.hpaSyncPeriodMs } : {}),
  })
  t.teardown(async () => {
    await controllers.stop()
    await sb.close()
  })
  const call = (r: Req): Promise<ApiResponse> => sb.cluster.handle({ group: '', version: 'v1', query: new URLSearchParams(), ...r } as ApiRequest)
  const version = (group: string): string => (group === 'cache.example.com' ? 'v1alpha1' : 'v1')
  return {
    sb,
    controllers,
    call,
    async get(resource, name, group = '', namespace = 'default') {
      const res = await call({ verb: 'get', group, version: version(group), resource, namespace, name })
      return res.status === 200 ? (res.body as Obj) : undefined
    },
    async list(resource, group = '', namespace = 'default') {
      const res = await call({ verb: 'list', group, version: version(group), resource, namespace })
      return (res.body as { items: Obj[] }).items
    },
  }
}

/** Polls `check` until it returns a value other than undefined or false; fails after `timeoutMs`. */
export async function until<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await check()
    if (v !== undefined && v !== false) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

/**
 * Runs real kubectl against a sandbox (asynchronously: the sandbox answers in this process);
 * resolves with stdout, or rejects with an error whose message carries stderr.
 */
export function kubectlFor(sb: Sandbox): (args: string[], input?: string) => Promise<string> {
  return async (args, input) => {
    const run = promisify(execFile)(kubectlPath(), ['--kubeconfig', sb.kubeconfigPath, ...args], { timeout: 60_000 })
    if (input !== undefined) run.child.stdin?.end(input)
    return (await run).stdout
  }
}
