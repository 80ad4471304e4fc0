/**
 * `memcached-operator sandbox` (and `npm start`): the project's in-process Kubernetes API server on
 * loopback with the Memcached CRD installed, the operator running against it, and the sample CR
 * applied — a chart author sees the whole loop and can point kubectl at the printed kubeconfig.
 * `--no-operator` starts the cluster alone (for `memcached-operator run --kubeconfig …` in other
 * processes); `--watch-chart` re-renders every CR when a chart file changes.
 */
import { readFile } from 'node:fs/promises'
import { join, relative, resolve } from 'node:path'
import { memcachedCRD } from '../api/crd.ts'
import { chartRevisionCRD } from '../api/chart-revision-crd.ts'
import { rolloutCRD } from '../api/rollout-crd.ts'
import { parseMemcacheds } from '../api/memcached.ts'
import { createLogger, resolveLevel, type Logger } from '../controller/log.ts'
import { DEFAULT_CHART_DIR, loadChart, type Chart } from '../render/chart.ts'
import { DeadlineExceeded, withDeadline } from '../render/deadline.ts'
import { renderInstance, templateRunning } from '../render/engine.ts'
import { RenderError } from '../render/errors.ts'
import { FaultSpecError, parseFaults } from '../sandbox/faults.ts'
import { parsePodFailures, PodFailureRuleError, type PodFailureRule } from '../sandbox/controllers/pod-failures.ts'
import { startSandbox, type Sandbox } from '../sandbox/index.ts'
import type { KubeObject, WatchEvent } from '../sandbox/types.ts'
import { watchChart, type ChartWatch } from './chart-watch.ts'
import { processSignal, UsageError, type CliIO } from './io.ts'
import { listenError, startOperator, type Operator } from './run.ts'

/**
 * The sandbox itself, for the command that plans in one (`plan --offline`, plan-offline.ts): this
 * module is the product's one door to the sandbox, and it too loads it with a dynamic `import()`.
 */
export { startSandbox }

/** The sample the sandbox applies (relative to the checkout). */
export const SAMPLE = resolve(DEFAULT_CHART_DIR, '..', '..', 'kustomize', 'samples', 'cache_v1alpha1_memcached.yaml')

export interface SandboxCommandOptions {
  port?: string
  kubeconfigOut?: string
  faults?: string
  /** `--pod-failure FAILURE=PATTERN`, repeatable: containers whose image matches fail (ImagePull, CrashLoop, NeverReady). */
  podFailure?: string[]
  podReadyDelay?: string
  chart?: string
  /** commander's `--no-operator` */
  operator?: boolean
  watchChart?: boolean
  /** Memcached files to apply at start (default: the sample); `--no-sample` applies none. */
  sample?: boolean
  logLevel?: string
  /** `--kubeconfig-for IDENTITY=FILE`, repeatable: IDENTITY is a user (`jane`, `system:serviceaccount:ns:sa`), optionally `,group,…`. */
  kubeconfigFor?: string[]
  /** Act as OpenShift: SecurityContextConstraints served, Pods admitted as restricted-v2 (sandbox/admission/scc.ts). */
  openshift?: boolean
  /** How long a changed chart's trial render of every CR may take (default {@link CHART_DEADLINE_MS}). */
  chartDeadlineMs?: number
}

/** How long `--watch-chart`'s trial render of a changed chart may take before the chart is refused. */
export const CHART_DEADLINE_MS = 10_000

/**
 * Renders every Memcached of the sandbox (and minimal values) with `chart` under a deadline; the
 * problem when a template did not end, else undefined. Other render errors are the operator's to
 * report, per CR, as usual.
 */
async function trialRender(sandbox: Sandbox, chart: Chart, deadlineMs: number): Promise<string | undefined> {
  const res = await sandbox.cluster.handle({ verb: 'list', group: 'cache.example.com', version: 'v1alpha1', resource: 'memcacheds', query: new URLSearchParams(), userAgent: 'sandbox-watch-chart' } as Parameters<typeof sandbox.cluster.handle>[0])
  const items = res.status === 200 ? ((res.body as { items?: { metadata: { name: string; namespace?: string }; spec?: unknown }[] }).items ?? []) : []
  const inputs = [{ who: 'minimal values (size 1)', name: 'watch-chart', namespace: 'default', spec: { size: 1 } as unknown }, ...items.map((cr) => ({ who: `Memcached ${cr.metadata.namespace}/${cr.metadata.name}`, name: cr.metadata.name, namespace: cr.metadata.namespace ?? 'default', spec: cr.spec ?? {} }))]
  let current = ''
  try {
    withDeadline(deadlineMs, () => {
      for (const input of inputs) {
        current = input.who
        try {
          renderInstance(chart, input)
        } catch (err) {
          if (!(err instanceof RenderError)) throw err
        }
      }
    })
  } catch (err) {
    if (!(err instanceof DeadlineExceeded)) throw err
    return `${current}: ${templateRunning() ?? 'templates'}: ${err.message}`
  }
  return undefined
}

/** Parses `--kubeconfig-for` values: `jane=FILE`, `jane,devs,ops=FILE`, `system:serviceaccount:ns:sa=FILE`. */
export function parseKubeconfigFor(values: string[]): { user: string; groups: string[]; file: string }[] {
  return values.map((v) => {
    const i = v.indexOf('=')
    const who = i < 0 ? '' : v.slice(0, i)
    const file = i < 0 ? '' : v.slice(i + 1)
    const [user = '', ...groups] = who.split(',').map((s) => s.trim())
    if (user === '' || file === '') throw new UsageError(`--kubeconfig-for takes USER[,GROUP...]=FILE, not ${JSON.stringify(v)}`)
    return { user, groups: groups.filter((g) => g !== ''), file }
  })
}

/** A running sandbox, with the operator unless `--no-operator`. */
export interface RunningSandbox {
  sandbox: Sandbox
  operator: Operator | undefined
  close(): Promise<void>
}

function integer(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`${flag} must be a non-negative integer, not ${JSON.stringify(value)}`)
  return n
}

/** The rules of `--pod-failure FAILURE=PATTERN` (controllers/pod-failures.ts). @throws UsageError naming the flag */
export function podFailureRules(flags: readonly string[]): PodFailureRule[] {
  try {
    return parsePodFailures(flags.map((f) => {
      const i = f.indexOf('=')
      if (i < 1) throw new PodFailureRuleError(`${JSON.stringify(f)}: must be FAILURE=PATTERN, e.g. CrashLoop=:crash$`)
      return { failure: f.slice(0, i), image: f.slice(i + 1) }
    }))
  } catch (err) {
    if (err instanceof PodFailureRuleError) throw new UsageError(`--pod-failure: ${err.message}`)
    throw err
  }
}

/** Starts the sandbox as the command describes it; the caller owns `close()`. */
export async function startSandboxCommand(opts: SandboxCommandOptions, io: CliIO, log?: Logger): Promise<RunningSandbox> {
  const port = integer('--port', opts.port, 0)
  if (port > 65535) throw new UsageError(`--port must be at most 65535, not ${port}`)
  const podReadyDelayMs = integer('--pod-ready-delay', opts.podReadyDelay, 1000)
  const identities = parseKubeconfigFor(opts.kubeconfigFor ?? [])
  const chartDir = opts.chart ? resolve(io.cwd, opts.chart) : DEFAULT_CHART_DIR
  if (opts.faults !== undefined) {
    try {
      parseFaults(opts.faults)
    } catch (err) {
      if (err instanceof FaultSpecError) throw new UsageError(`--faults: ${err.message}`)
      throw err
    }
  }
  const podFailures = podFailureRules(opts.podFailure ?? [])
  let chart: Chart = loadChart(chartDir)
  let sandbox: Sandbox
  try {
    sandbox = await startSandbox({
      port,
      podReadyDelayMs,
      installCRDs: [memcachedCRD(chart) as unknown as KubeObject, chartRevisionCRD() as unknown as KubeObject, rolloutCRD() as unknown as KubeObject],
      ...(opts.faults !== undefined ? { faults: opts.faults } : {}),
      ...(podFailures.length > 0 ? { podFailures } : {}),
      ...(opts.openshift ? { openshift: true } : {}),
      ...(opts.kubeconfigOut !== undefined ? { kubeconfigOut: resolve(io.cwd, opts.kubeconfigOut) } : {}),
    })
  } catch (err) {
    throw listenError(err, `--port ${port}`)
  }
  const written: string[] = []
  for (const id of identities) written.push(`kubeconfig for ${id.user}: ${await sandbox.kubeconfigFor({ user: id.user, groups: id.groups }, resolve(io.cwd, id.file))}`)
  const k = `kubectl --kubeconfig ${sandbox.kubeconfigPath}`
  const runOperator = opts.operator !== false
  io.stdout(
    [
      `sandbox cluster serving on ${sandbox.url}`,
      `kubeconfig: ${sandbox.kubeconfigPath}`,
      ...written,
      runOperator ? 'the operator runs against it (JSON logs on stderr)' : `no operator: run one with  npx memcached-operator run --kubeconfig ${sandbox.kubeconfigPath}`,
      '',
      'Try:',
      ...tryLines(k, opts.sample === false ? shortPath(io.cwd, SAMPLE) : undefined),
      '',
      `Faults can be changed while it runs: curl -X PUT --data '{"errorRate":0.05}' ${sandbox.url}/sandbox/v1/faults`,
      'Stop with Ctrl-C.',
      '',
    ].join('\n'),
  )

  let operator: Operator | undefined
  let watcher: ChartWatch | undefined
  let stopNodes: (() => void) | undefined
  try {
    if (runOperator) {
      const opLog = log ?? createLogger({ level: resolveLevel(opts.logLevel), name: 'memcached-operator', destination: process.stderr })
      operator = await startOperator(
        { kubeconfig: sandbox.kubeconfigPath, namespace: [], concurrency: '4', resyncPeriod: '10m', leaderElectionId: 'memcached-operator-leader', metricsBindAddress: '0', healthProbeBindAddress: '0' },
        io,
        opLog,
        () => chart,
      )
      stopNodes = reportNodes(sandbox, io)
      if (opts.watchChart) {
        const running = sandbox
        watcher = watchChart(chartDir, () => {
          void (async () => {
            try {
              const next = loadChart(chartDir, true)
              // A template that never ends would freeze the operator (and this process) at its
              // first render: the new chart renders every CR once, under a deadline, first.
              const stuck = await trialRender(running, next, opts.chartDeadlineMs ?? CHART_DEADLINE_MS)
              if (stuck !== undefined) throw new RenderError('template', [stuck])
              chart = next
              io.stdout(`chart ${chartDir} changed: re-rendering every Memcached\n`)
              operator?.controller.enqueueAll()
            } catch (err) {
              if (!(err instanceof RenderError)) throw err
              io.stderr(`chart ${chartDir} not reloaded:\n${err.problems.map((p) => `  - ${p}`).join('\n')}\n`)
            }
          })()
        })
        await watcher.ready
      }
    }
    if (opts.sample !== false) {
      for (const cr of parseMemcacheds(await readFile(SAMPLE, 'utf8'), SAMPLE)) {
        const res = await sandbox.cluster.handle({
          verb: 'patch',
          group: 'cache.example.com',
          version: 'v1alpha1',
          resource: 'memcacheds',
          namespace: cr.metadata.namespace ?? 'default',
          name: cr.metadata.name,
          body: cr,
          contentType: 'application/apply-patch+yaml',
          query: new URLSearchParams({ fieldManager: 'sandbox-sample', force: 'true' }),
          userAgent: 'sandbox-sample',
        })
        if (res.status >= 300) throw new Error(`applying ${join('kustomize', 'samples')} failed: ${JSON.stringify(res.body)}`)
        io.stdout(`applied Memcached ${cr.metadata.namespace ?? 'default'}/${cr.metadata.name} (${SAMPLE})\n`)
      }
    }
  } catch (err) {
    stopNodes?.()
    await watcher?.close()
    await operator?.stop()
    await sandbox.close()
    throw err
  }
  return {
    sandbox,
    operator,
    async close() {
      stopNodes?.()
      await watcher?.close()
      await operator?.stop()
      await sandbox.close()
    },
  }
}

/** `file` relative to `cwd` when it lies below it, else absolute. */
function shortPath(cwd: string, file: string): string {
  const rel = relative(cwd, file)
  return rel === '' || rel.startsWith('..') || resolve(cwd, rel) !== file ? file : rel
}

/**
 * The kubectl commands `sandbox` suggests (`k` is kubectl with the kubeconfig). With `applySample`
 * (the path of the sample, when the sandbox did not apply it) they start by creating the sample CR,
 * so that each of them works as printed.
 */
export function tryLines(k: string, applySample?: string): string[] {
  return [
    ...(applySample !== undefined ? [`  ${k} apply -f ${applySample}`] : []),
    `  ${k} get mc,deploy,pods -o wide`,
    `  ${k} scale mc/memcached-sample --replicas=5`,
    `  ${k} get mc memcached-sample -o jsonpath='{.status.nodes}'`,
    `  ${k} get pods -w`,
    `  ${k} auth can-i --list --as system:serviceaccount:default:default`,
  ]
}

/** Prints each Memcached's status.nodes whenever it changes, from an in-process watch. */
function reportNodes(sandbox: Sandbox, io: CliIO): () => void {
  const seen = new Map<string, string>()
  return sandbox.cluster.watch(
    { verb: 'watch', group: 'cache.example.com', version: 'v1alpha1', resource: 'memcacheds', query: new URLSearchParams(), userAgent: 'sandbox-report' },
    (event: WatchEvent) => {
      const cr = event.object as KubeObject & { status?: { nodes?: string[]; readyReplicas?: number } ; spec?: { size?: number } }
      if (event.type !== 'ADDED' && event.type !== 'MODIFIED') return
      const key = `${cr.metadata.namespace}/${cr.metadata.name}`
      const line = `${key}: size ${cr.spec?.size ?? '?'}, ready ${cr.status?.readyReplicas ?? 0}, status.nodes ${JSON.stringify(cr.status?.nodes ?? [])}`
      if (seen.get(key) === line) return
      seen.set(key, line)
      io.stdout(`${line}\n`)
    },
  )
}

/** Runs `sandbox` until SIGINT/SIGTERM; returns the exit code. */
export async function runSandbox(opts: SandboxCommandOptions, io: CliIO, signal: AbortSignal = processSignal()): Promise<number> {
  const running = await startSandboxCommand(opts, io)
  const failed = running.operator?.failed ?? new Promise<number>(() => {})
  const code = await Promise.race([failed, new Promise<number>((done) => (signal.aborted ? done(0) : signal.addEventListener('abort', () => done(0), { once: true })))])
  io.stderr('stopping the sandbox\n')
  await running.close()
  return code
}
