/**
 * `memcached-operator sandbox`: the project's in-process Kubernetes API server on loopback, with
 * the Memcached CRD installed and a kubeconfig that kubectl and the operator can use. Runs until
 * SIGINT or SIGTERM.
 */
import { resolve } from 'node:path'
import { memcachedCRD } from '../api/crd.ts'
import { DEFAULT_CHART_DIR, loadChart } from '../render/chart.ts'
import { startSandbox, type Sandbox } from '../sandbox/index.ts'
import type { KubeObject } from '../sandbox/types.ts'
import { processSignal, UsageError, type CliIO } from './io.ts'

export interface SandboxCommandOptions {
  port?: string
  kubeconfigOut?: string
  faults?: string
  podReadyDelay?: string
  chart?: string
}

function integer(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`${flag} must be a non-negative integer, not ${JSON.stringify(value)}`)
  return n
}

/** Starts the sandbox as the command describes it; the caller owns `close()`. */
export async function startSandboxCommand(opts: SandboxCommandOptions, io: CliIO): Promise<Sandbox> {
  const port = integer('--port', opts.port, 0)
  if (port > 65535) throw new UsageError(`--port must be at most 65535, not ${port}`)
  const chart = loadChart(opts.chart ? resolve(io.cwd, opts.chart) : DEFAULT_CHART_DIR)
  const sandbox = await startSandbox({
    port,
    podReadyDelayMs: integer('--pod-ready-delay', opts.podReadyDelay, 1000),
    installCRDs: [memcachedCRD(chart) as unknown as KubeObject],
    ...(opts.faults !== undefined ? { faults: opts.faults } : {}),
    ...(opts.kubeconfigOut !== undefined ? { kubeconfigOut: resolve(io.cwd, opts.kubeconfigOut) } : {}),
  })
  const k = `kubectl --kubeconfig ${sandbox.kubeconfigPath}`
  io.stdout(
    [
      `sandbox cluster serving on ${sandbox.url}`,
      `kubeconfig: ${sandbox.kubeconfigPath}`,
      '',
      'Try:',
      `  ${k} get crd,ns`,
      `  ${k} apply -f kustomize/samples/cache_v1alpha1_memcached.yaml`,
      `  ${k} get mc,deploy,pods -o wide`,
      `  ${k} get pods -w`,
      '',
      'Faults can be changed while it runs: curl -X PUT --data \'{"errorRate":0.05}\' ' + `${sandbox.url}/sandbox/v1/faults`,
      'Stop with Ctrl-C.',
      '',
    ].join('\n'),
  )
  return sandbox
}

/** Runs `sandbox` until SIGINT/SIGTERM; returns the exit code. */
export async function runSandbox(opts: SandboxCommandOptions, io: CliIO, signal: AbortSignal = processSignal()): Promise<number> {
  const sandbox = await startSandboxCommand(opts, io)
  await new Promise<void>((done) => {
    if (signal.aborted) done()
    else signal.addEventListener('abort', () => done(), { once: true })
  })
  io.stderr('stopping the sandbox\n')
  await sandbox.close()
  return 0
}
