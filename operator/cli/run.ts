/**
 * `memcached-operator run`: the operator. Connects with a kubeconfig (`--kubeconfig`,
 * `KUBECONFIG`, ~/.kube/config) or the in-cluster service account, serves /healthz, /readyz and
 * /metrics, optionally elects a leader, and reconciles until SIGTERM, when it drains in-flight
 * reconciles (aborting them after the graceful shutdown timeout), releases the lease and exits 0.
 * A leader that loses its lease aborts every request in flight and exits 1, as
 * controller-runtime's manager does.
 */
import { KubeConfig } from '@kubernetes/client-node'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { API_VERSION, KIND } from '../api/memcached.ts'
import { ApiError, KubeClient } from '../controller/client.ts'
import { defaultKubeconfigFiles, loadKubeconfigFiles } from '../controller/credentials.ts'
import { BindAddressError, parseBindAddress, startEndpoints, type Endpoints } from '../controller/health.ts'
import { LeaderElector } from '../controller/leader.ts'
import { createLogger, resolveLevel, type Logger } from '../controller/log.ts'
import { createMetrics } from '../controller/metrics.ts'
import { DEFAULT_CHART_DIR, loadChart, type Chart } from '../render/chart.ts'
import { PLATFORMS } from './render.ts'
import { ClusterScopedKindError, controllerMetrics, MemcachedController } from '../reconcile/controller.ts'
import { FIELD_MANAGER } from '../reconcile/diff.ts'
import { InputError, packageVersion, processSignal, UsageError, type CliIO } from './io.ts'

export interface RunOptions {
  kubeconfig?: string
  namespace: string[]
  /** A label selector: only the Memcacheds it matches are reconciled (a shard of the fleet). */
  selector?: string
  chart?: string
  concurrency: string
  resyncPeriod: string
  /** Workloads re-created at a time across the fleet (default 1; 0: no limit). */
  maxConcurrentRecreations?: string
  /** Go duration (default 10m): how long a re-creation holds its slot while its replacement is not ready. */
  recreationTimeout?: string
  /** `auto` (default: discovery), `kubernetes` or `openshift`. */
  platform?: string
  leaderElect?: boolean
  leaderElectionNamespace?: string
  leaderElectionId: string
  /** Go durations; defaults 15s, 10s, 2s (client-go's). */
  leaderElectLeaseDuration?: string
  leaderElectRenewDeadline?: string
  leaderElectRetryPeriod?: string
  /** Go duration (default 20s): the drain's bound, inside the pod's 30 s termination grace period. */
  gracefulShutdownTimeout?: string
  /** /healthz fails when an informer made no progress for this long (default 15 min; for tests). */
  informerStallMs?: number
  metricsBindAddress: string
  healthProbeBindAddress: string
  logLevel?: string
}

const UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/** A Go duration (`10m`, `1h30m`, `500ms`) in milliseconds. */
export function parseDuration(text: string): number {
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)]
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) throw new UsageError(`invalid duration ${JSON.stringify(text)} (use e.g. 30s, 10m, 1h30m)`)
  return parts.reduce((ms, p) => ms + Number(p[1]) * UNITS[p[2]!]!, 0)
}

/** The namespace the operator runs in (in a cluster: its service account's), for its Lease. */
function ownNamespace(): string {
  try {
    return readFileSync('/var/run/secrets/kubernetes.io/serviceaccount/namespace', 'utf8').trim()
  } catch {
    return 'default'
  }
}

/** The kubeconfig of `--kubeconfig`, else KUBECONFIG, ~/.kube/config or the in-cluster service account. */
export function loadKubeConfig(file: string | undefined, io: CliIO): KubeConfig {
  let kc: KubeConfig
  try {
    const files = file ? [resolve(io.cwd, file)] : defaultKubeconfigFiles()
    if (files.length > 0) kc = loadKubeconfigFiles(files)
    else {
      // In a pod: the service account's token (re-read by client-node) and CA.
      kc = new KubeConfig()
      kc.loadFromDefault()
    }
  } catch (err) {
    throw new InputError(`kubeconfig ${file ?? process.env.KUBECONFIG ?? '~/.kube/config'}: ${err instanceof Error ? err.message : String(err)}`)
  }
  if (!kc.getCurrentCluster()) throw new InputError('no cluster: give --kubeconfig, set KUBECONFIG, or run in a cluster')
  return kc
}

/** A running operator. */
export interface Operator {
  controller: MemcachedController
  endpoints: Endpoints
  elector: LeaderElector | undefined
  /** Drains, releases the lease, closes everything. */
  stop(): Promise<void>
  /** Resolves with an exit code when the operator must end by itself (leadership lost). */
  failed: Promise<number>
}

/** {@link startOperator} was told to stop before the caches synced; everything it started is closed. */
export class StartAborted extends Error {
  constructor() {
    super('stopped before the caches synced')
    this.name = 'StartAborted'
  }
}

/**
 * Starts the operator as `run` describes it; `chart` overrides where the chart comes from (the
 * sandbox's --watch-chart reloads it). `signal` ends a start still waiting for its caches (which
 * never sync while, say, the CRD is missing).
 * @throws StartAborted when `signal` fires before the caches synced
 */
export async function startOperator(opts: RunOptions, io: CliIO, log: Logger = createLogger({ level: resolveLevel(opts.logLevel), name: 'memcached-operator' }), chartSource?: () => Chart, signal?: AbortSignal): Promise<Operator> {
  const concurrency = Number(opts.concurrency)
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new UsageError(`--concurrency must be a positive integer, not ${JSON.stringify(opts.concurrency)}`)
  const resyncPeriodMs = parseDuration(opts.resyncPeriod)
  const maxConcurrentRecreations = Number(opts.maxConcurrentRecreations ?? '1')
  if (!Number.isInteger(maxConcurrentRecreations) || maxConcurrentRecreations < 0) throw new UsageError(`--max-concurrent-recreations must be a non-negative integer (0: no limit), not ${JSON.stringify(opts.maxConcurrentRecreations)}`)
  const recreationTimeoutMs = parseDuration(opts.recreationTimeout ?? '10m')
  const platform = opts.platform ?? 'auto'
  if (platform !== 'auto' && platform !== 'kubernetes' && platform !== 'openshift') throw new UsageError(`--platform must be auto, ${PLATFORMS.join(' or ')}, not ${JSON.stringify(opts.platform)}`)
  const leaseDurationMs = parseDuration(opts.leaderElectLeaseDuration ?? '15s')
  const renewDeadlineMs = parseDuration(opts.leaderElectRenewDeadline ?? '10s')
  const retryPeriodMs = parseDuration(opts.leaderElectRetryPeriod ?? '2s')
  if (!(retryPeriodMs < renewDeadlineMs && renewDeadlineMs < leaseDurationMs)) throw new UsageError('--leader-elect-retry-period < --leader-elect-renew-deadline < --leader-elect-lease-duration must hold')
  const shutdownTimeoutMs = parseDuration(opts.gracefulShutdownTimeout ?? '20s')
  for (const [flag, address] of [['--metrics-bind-address', opts.metricsBindAddress], ['--health-probe-bind-address', opts.healthProbeBindAddress]] as const) {
    try {
      parseBindAddress(address)
    } catch (err) {
      throw new UsageError(`${flag}: ${err instanceof Error ? err.message : String(err)}`)
    }
  }
  const kc = loadKubeConfig(opts.kubeconfig, io)
  const chartDir = opts.chart ? resolve(io.cwd, opts.chart) : DEFAULT_CHART_DIR
  const loaded = chartSource ? undefined : loadChart(chartDir)
  const chart = chartSource ?? (() => loaded!)
  const version = packageVersion()
  const cluster = kc.getCurrentCluster()!
  log.info({ cluster: cluster.server, context: kc.getCurrentContext(), chart: chartDir, namespaces: opts.namespace.length > 0 ? opts.namespace : 'all', ...(opts.selector !== undefined ? { selector: opts.selector } : {}), version }, 'starting')

  // Every request of the controller (reconciles, events, lists) shares this context: aborted when
  // leadership is lost or the shutdown deadline passes, and then nothing more is sent.
  const work = new AbortController()
  let elector: LeaderElector | undefined
  let led = false
  let stopping = false
  let fail: (code: number) => void = () => {}
  const failed = new Promise<number>((r) => (fail = r))
  const lose = (): void => {
    if (work.signal.aborted) return
    // As controller-runtime: a process that lost its lease must not write again.
    log.error('lost the leader lease: aborting in-flight reconciles and exiting')
    work.abort()
    fail(1)
  }
  const requestSignal = (): AbortSignal => {
    // The fence does not wait for a timer: asked past the renew deadline, the elector reports the
    // loss (lose) at once, and nothing is sent.
    if (led && !stopping) elector?.isLeader()
    return work.signal
  }
  const client = new KubeClient(kc, { userAgent: `memcached-operator/${version}`, fieldManager: FIELD_MANAGER, requestSignal })
  if (opts.selector !== undefined) {
    // The API server is the judge of a selector's syntax (one list of at most one item); any
    // other failure is left to the informers, which retry.
    try {
      await client.list({ apiVersion: API_VERSION, kind: KIND }, { labelSelector: opts.selector, limit: 1, ...(opts.namespace[0] ? { namespace: opts.namespace[0] } : {}) })
    } catch (err) {
      if (err instanceof ApiError && err.status === 400) {
        client.close()
        throw new UsageError(`--selector ${JSON.stringify(opts.selector)}: ${err.message}`)
      }
    }
  }
  const metrics = createMetrics()
  const controller = new MemcachedController({
    client,
    chart,
    namespaces: opts.namespace,
    ...(opts.selector !== undefined ? { selector: opts.selector } : {}),
    concurrency,
    resyncPeriodMs,
    maxConcurrentRecreations,
    recreationTimeoutMs,
    ...(platform !== 'auto' ? { platform } : {}),
    log,
    metrics: controllerMetrics(metrics),
  })
  const informerStallMs = opts.informerStallMs ?? 15 * 60_000
  const endpoints = await startEndpoints({
    metricsBindAddress: opts.metricsBindAddress,
    healthProbeBindAddress: opts.healthProbeBindAddress,
    registry: metrics.registry,
    // Alive while every informer makes progress (lists, events, bookmarks, watch restarts): a
    // wedged cache is only cured by a restart.
    healthz: { informers: () => controller.stalledInformers(informerStallMs).length === 0 },
    // Ready once the caches are synced, whatever the leader-election role.
    readyz: { informers: () => controller.hasSynced() },
  })
  log.info({ metrics: endpoints.metricsAddress, probes: endpoints.healthProbeAddress }, 'serving endpoints')
  // Stopping the informers ends their wait for sync, so a signal is not ignored until they sync.
  let aborting: Promise<void> | undefined
  const abort = (): void => {
    aborting ??= controller.stop()
  }
  if (signal?.aborted) abort()
  signal?.addEventListener('abort', abort, { once: true })
  try {
    await controller.start()
  } catch (err) {
    if (!(err instanceof ClusterScopedKindError)) throw err
    // The chart asks for something the operator will not do: say so and exit, as for a bad chart.
    await controller.stop()
    await endpoints.close()
    client.close()
    throw new InputError(`chart ${chartDir}: ${err.message}`)
  } finally {
    signal?.removeEventListener('abort', abort)
  }
  if (aborting) {
    await aborting
    await endpoints.close()
    client.close()
    log.info('stopped before the caches synced')
    throw new StartAborted()
  }
  log.info('caches synced')
  // The elector has its own client: its requests are bounded by its own deadlines, and the
  // release on shutdown must pass after the controller's requests were aborted.
  const leaseClient = opts.leaderElect ? new KubeClient(kc, { userAgent: `memcached-operator/${version}` }) : undefined
  if (leaseClient) {
    elector = new LeaderElector({
      client: leaseClient,
      namespace: opts.leaderElectionNamespace ?? ownNamespace(),
      name: opts.leaderElectionId,
      leaseDurationMs,
      renewDeadlineMs,
      retryPeriodMs,
      onStartedLeading: () => {
        log.info('became the leader')
        led = true
        controller.runWorkers()
      },
      onStoppedLeading: lose,
      onNewLeader: (identity) => log.info({ leader: identity }, 'leader observed'),
      onError: (err) => log.warn({ err: err.message }, 'leader election request failed'),
    })
    elector.start()
  } else controller.runWorkers()

  let stopped = false
  return {
    controller,
    endpoints,
    elector,
    failed,
    async stop() {
      if (stopped) return
      stopped = true
      stopping = true
      log.info({ timeoutMs: shutdownTimeoutMs }, 'shutting down: draining in-flight reconciles')
      const deadline = setTimeout(() => {
        log.warn('graceful shutdown timeout: aborting in-flight reconciles')
        work.abort()
      }, shutdownTimeoutMs)
      await controller.stop()
      clearTimeout(deadline)
      if (elector) {
        if (await elector.release()) log.info('released the leader lease')
        await elector.stop()
      }
      await endpoints.close()
      client.close()
      leaseClient?.close()
      log.info('stopped')
    },
  }
}

/** Runs the operator until SIGINT/SIGTERM (exit 0) or a lost lease (exit 1). */
export async function runOperator(opts: RunOptions, io: CliIO, signal: AbortSignal = processSignal()): Promise<number> {
  let log: Logger
  try {
    log = createLogger({ level: resolveLevel(opts.logLevel), name: 'memcached-operator' })
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err))
  }
  let operator: Operator
  try {
    operator = await startOperator(opts, io, log, undefined, signal)
  } catch (err) {
    if (err instanceof StartAborted) return 0
    throw err instanceof BindAddressError ? new UsageError(err.message) : err
  }
  const code = await Promise.race([
    operator.failed,
    new Promise<number>((done) => (signal.aborted ? done(0) : signal.addEventListener('abort', () => done(0), { once: true }))),
  ])
  await operator.stop()
  return code
}
