/**
 * `memcached-operator run`: the operator. Connects with a kubeconfig (`--kubeconfig`,
 * `KUBECONFIG`, ~/.kube/config) or the in-cluster service account, serves /healthz, /readyz and
 * /metrics, optionally elects a leader, and reconciles until SIGTERM, when it drains in-flight
 * reconciles (aborting them after the graceful shutdown timeout), releases the lease and exits 0.
 * A leader that loses its lease aborts every request in flight and exits 1, as
 * controller-runtime's manager does.
 */
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { API_VERSION, KIND } from '../api/memcached.ts'
import { ApiError, KubeClient } from '../controller/client.ts'
import { BindAddressError, parseBindAddress, startEndpoints, type Endpoints } from '../controller/health.ts'
import { LeaderElector } from '../controller/leader.ts'
import { createLogger, resolveLevel, type Logger } from '../controller/log.ts'
import { createMetrics } from '../controller/metrics.ts'
import { createRuntimeMetrics } from '../controller/metrics-runtime.ts'
import { kubeMetricsAuthorizer } from '../controller/metrics-auth.ts'
import { certDirVersion, readCertDir, selfSignedCertificate, type KeyPair } from '../controller/metrics-tls.ts'
import { TokenBucket } from '../controller/ratelimit.ts'
import { DEFAULT_CHART_DIR, loadChart, type Chart } from '../render/chart.ts'
import { PLATFORMS } from './render.ts'
import { ClusterScopedKindError, MemcachedController } from '../reconcile/controller.ts'
import { controllerMetrics } from '../reconcile/controller-metrics.ts'
import { FIELD_MANAGER } from '../reconcile/diff.ts'
import { InputError, packageVersion, parseDuration, processSignal, UsageError, type CliIO } from './io.ts'
import { loadKubeConfig } from './kubeconfig.ts'
import { selectorKeys } from '../reconcile/shard.ts'
import { readPlatformOverlays } from './overlays-file.ts'
import { ChartRevisions } from '../reconcile/revision.ts'
import { DEFAULT_BUDGET, DEFAULT_MAX_PRUNE_FRACTION, type BudgetLimits } from '../reconcile/budget.ts'
import { RolloutController } from '../fleet/rollout.ts'

export { loadKubeConfig, parseDuration }

export interface RunOptions {
  kubeconfig?: string
  namespace: string[]
  /** A label selector: only the Memcacheds it matches are reconciled (a shard of the fleet). */
  selector?: string
  chart?: string
  /** The ChartRevision that Memcacheds without spec.chartRevision run (default: the labelled one, else the operator's own chart). */
  defaultChartRevision?: string
  concurrency: string
  resyncPeriod: string
  /** Workloads re-created at a time across the fleet (default 1; 0: no limit). */
  maxConcurrentRecreations?: string
  /** Go duration (default 10m): how long a re-creation holds its slot while its replacement is not ready. */
  recreationTimeout?: string
  /** Objects deleted per --budget-window across the fleet (default 20; 0: no limit). */
  maxDeletes?: string
  /** Workloads whose pods restart per --budget-window across the fleet (default 50; 0: no limit). */
  maxRestarts?: string
  /** Go duration (default 10m): the window of the damage budgets. */
  budgetWindow?: string
  /** A render may prune at most this fraction of a CR's objects (default 0.5; 1: no limit). */
  maxPruneFraction?: string
  /** `auto` (default: discovery), `kubernetes` or `openshift`. */
  platform?: string
  /** `--overlays FILE`: the platform's overlays, applied to every Memcached they select before its own. */
  overlays?: string
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
  /** Server-side timeout of the informers' watches (default 300–600 s at random; for tests). */
  watchTimeoutSeconds?: number
  /** How often the leader looks at Rollouts (default 2 s; for tests). */
  rolloutPollMs?: number
  metricsBindAddress: string
  /** /metrics over HTTPS with authentication and authorization (controller-runtime's secure metrics). */
  metricsSecure?: boolean
  /** tls.crt and tls.key for the HTTPS metrics server (default: self-signed). */
  metricsCertDir?: string
  /** How often --metrics-cert-dir is checked for a rotated certificate (default 10 s; for tests). */
  metricsCertCheckMs?: number
  healthProbeBindAddress: string
  logLevel?: string
  /** Requests per second to the API server (client-side token bucket; default -1: no limit). */
  kubeApiQps?: string
  /** Requests that may go at once above the rate (default 30). */
  kubeApiBurst?: string
}

/**
 * No client-side limit unless asked, as controller-runtime since v0.21 (pkg/client/config: QPS -1)
 * relies on API Priority and Fairness; what bounds a throttled operator is the server's Retry-After,
 * honoured in the request, and the work queue's shared requeue bucket. A negative --kube-api-qps
 * means no limit, as client-go reads a negative QPS; the burst applies only with a limit.
 */
export const DEFAULT_KUBE_API_QPS = -1
export const DEFAULT_KUBE_API_BURST = 30

/** The damage budgets of `--max-deletes`, `--max-restarts` and `--budget-window`. @throws UsageError naming the flag */
export function budgetLimits(opts: Pick<RunOptions, 'maxDeletes' | 'maxRestarts' | 'budgetWindow'>): BudgetLimits {
  const count = (flag: string, text: string | undefined, fallback: number): number => {
    if (text === undefined) return fallback
    const n = Number(text)
    if (text.trim() === '' || !Number.isInteger(n) || n < 0) throw new UsageError(`${flag} must be a non-negative integer (0: no limit), not ${JSON.stringify(text)}`)
    return n
  }
  const windowMs = opts.budgetWindow === undefined ? DEFAULT_BUDGET.windowMs : parseDuration(opts.budgetWindow)
  if (!(windowMs > 0)) throw new UsageError(`--budget-window must be a positive duration, not ${JSON.stringify(opts.budgetWindow)}`)
  return { deletes: count('--max-deletes', opts.maxDeletes, DEFAULT_BUDGET.deletes), restarts: count('--max-restarts', opts.maxRestarts, DEFAULT_BUDGET.restarts), windowMs }
}

/** The namespace the operator runs in (in a cluster: its service account's), for its Lease. */
function ownNamespace(): string {
  try {
    return readFileSync('/var/run/secrets/kubernetes.io/serviceaccount/namespace', 'utf8').trim()
  } catch {
    return 'default'
  }
}

/**
 * A server that could not listen, as one line naming the flag (exit 1: it could not start), or
 * `err` itself when it is something else.
 */
export function listenError(err: unknown, flag: string): unknown {
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number }
  const why: Record<string, string> = { EADDRINUSE: 'the address is already in use', EACCES: 'permission denied', EADDRNOTAVAIL: 'the address is not available on this host' }
  if (typeof e?.code !== 'string' || why[e.code] === undefined) return err
  return new InputError(`${flag}: cannot listen on ${e.address ?? '?'}:${e.port ?? '?'}: ${why[e.code]}`)
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
  const budget = budgetLimits(opts)
  const maxPruneFraction = Number(opts.maxPruneFraction ?? DEFAULT_MAX_PRUNE_FRACTION)
  if (opts.maxPruneFraction?.trim() === '' || !(maxPruneFraction >= 0 && maxPruneFraction <= 1)) throw new UsageError(`--max-prune-fraction must be a number from 0 to 1 (1: no limit), not ${JSON.stringify(opts.maxPruneFraction)}`)
  const platform = opts.platform ?? 'auto'
  if (platform !== 'auto' && platform !== 'kubernetes' && platform !== 'openshift') throw new UsageError(`--platform must be auto, ${PLATFORMS.join(' or ')}, not ${JSON.stringify(opts.platform)}`)
  const leaseDurationMs = parseDuration(opts.leaderElectLeaseDuration ?? '15s')
  const renewDeadlineMs = parseDuration(opts.leaderElectRenewDeadline ?? '10s')
  const retryPeriodMs = parseDuration(opts.leaderElectRetryPeriod ?? '2s')
  if (!(retryPeriodMs < renewDeadlineMs && renewDeadlineMs < leaseDurationMs)) throw new UsageError('--leader-elect-retry-period < --leader-elect-renew-deadline < --leader-elect-lease-duration must hold')
  const shutdownTimeoutMs = parseDuration(opts.gracefulShutdownTimeout ?? '20s')
  if (!opts.metricsSecure && opts.metricsCertDir !== undefined) throw new UsageError('--metrics-cert-dir needs --metrics-secure')
  const qps = Number(opts.kubeApiQps ?? DEFAULT_KUBE_API_QPS)
  if (qps === 0 || !Number.isFinite(qps)) throw new UsageError(`--kube-api-qps must be a positive number (or negative for no limit), not ${JSON.stringify(opts.kubeApiQps)}`)
  const burst = Number(opts.kubeApiBurst ?? DEFAULT_KUBE_API_BURST)
  if (!Number.isInteger(burst) || burst < 1) throw new UsageError(`--kube-api-burst must be a positive integer, not ${JSON.stringify(opts.kubeApiBurst)}`)
  for (const [flag, address] of [['--metrics-bind-address', opts.metricsBindAddress], ['--health-probe-bind-address', opts.healthProbeBindAddress]] as const) {
    try {
      parseBindAddress(address)
    } catch (err) {
      throw new UsageError(`${flag}: ${err instanceof Error ? err.message : String(err)}`)
    }
  }
  const platformOverlays = readPlatformOverlays(opts.overlays, io.cwd)
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
  const metrics = createMetrics()
  // One bucket for every request of the controller, as client-go's rest.Config carries one.
  const rateLimiter = qps > 0 ? new TokenBucket({ qps, burst }) : undefined
  const client = new KubeClient(kc, { userAgent: `memcached-operator/${version}`, fieldManager: FIELD_MANAGER, requestSignal, ...(rateLimiter ? { rateLimiter } : {}), onRequestResult: metrics.requestResult })
  if (opts.selector !== undefined) {
    // The API server is the judge of a selector's syntax (one request for at most one item: a
    // consistent list with a limit is paginated, and its later pages are not wanted); any other
    // failure is left to the informers, which retry.
    try {
      await client.list({ apiVersion: API_VERSION, kind: KIND }, { labelSelector: opts.selector, limit: 1, firstPageOnly: true, ...(opts.namespace[0] ? { namespace: opts.namespace[0] } : {}) })
    } catch (err) {
      if (err instanceof ApiError && err.status === 400) {
        client.close()
        throw new UsageError(`--selector ${JSON.stringify(opts.selector)}: ${err.message}`)
      }
    }
    try {
      selectorKeys(opts.selector)
    } catch (err) {
      client.close()
      throw new UsageError(`--selector: ${err instanceof Error ? err.message : String(err)}`)
    }
  }
  const runtimeMetrics = createRuntimeMetrics(metrics.registry)
  if (opts.leaderElect) runtimeMetrics.setLeading(opts.leaderElectionId, false)
  const revisions = new ChartRevisions({ client, own: chart, log, onChange: () => controller.enqueueAll(), ...(opts.defaultChartRevision !== undefined ? { defaultRevision: opts.defaultChartRevision } : {}) })
  const controller = new MemcachedController({
    client,
    chart,
    chartFor: (cr) => revisions.resolve(cr),
    namespaces: opts.namespace,
    ...(opts.selector !== undefined ? { selector: opts.selector } : {}),
    concurrency,
    resyncPeriodMs,
    maxConcurrentRecreations,
    recreationTimeoutMs,
    budget,
    maxPruneFraction,
    ...(platform !== 'auto' ? { platform } : {}),
    ...(platformOverlays.length > 0 ? { platformOverlays } : {}),
    ...(opts.watchTimeoutSeconds !== undefined ? { watchTimeoutSeconds: opts.watchTimeoutSeconds } : {}),
    log,
    metrics: controllerMetrics(metrics, runtimeMetrics),
  })
  // Rollouts move the whole fleet: driven by an operator that watches all of it, and by its leader only.
  const rollouts = opts.namespace.length === 0 && opts.selector === undefined ? new RolloutController({ client, revisions, own: chart, log: log.child({ controller: 'rollout' }), memcacheds: () => controller.memcacheds(), ...(platform !== 'auto' ? { platform } : {}), ...(opts.rolloutPollMs !== undefined ? { pollMs: opts.rolloutPollMs } : {}) }) : undefined
  if (rollouts) controller.onMemcachedChange(() => rollouts.kick())
  let metricsTls: KeyPair | undefined
  try {
    metricsTls = opts.metricsSecure ? await metricsCertificate(opts.metricsCertDir ? resolve(io.cwd, opts.metricsCertDir) : undefined) : undefined
  } catch (err) {
    client.close()
    throw err
  }
  const informerStallMs = opts.informerStallMs ?? 15 * 60_000
  let leaseRefusal: () => string | undefined = () => undefined
  let endpoints: Endpoints
  try {
    endpoints = await startEndpoints({
      metricsBindAddress: opts.metricsBindAddress,
      healthProbeBindAddress: opts.healthProbeBindAddress,
      registry: metrics.registry,
      ...(metricsTls ? { metricsTls, metricsAuth: kubeMetricsAuthorizer(client, { onError: (message, err) => log.error({ err: err.message }, message) }) } : {}),
      // Alive while every informer makes progress (lists, events, bookmarks, watch restarts): a
      // wedged cache is only cured by a restart.
      healthz: { informers: () => controller.stalledInformers(informerStallMs).length === 0 },
      // Ready once the caches are synced, whatever the leader-election role, unless the Lease is
      // refused (403/401): a replica that can never lead is no standby (docs/install.md).
      readyz: { informers: () => controller.hasSynced(), leaderElection: () => leaseRefusal() === undefined },
    })
  } catch (err) {
    client.close()
    throw listenError(err, `--metrics-bind-address ${opts.metricsBindAddress} / --health-probe-bind-address ${opts.healthProbeBindAddress}`)
  }
  log.info({ metrics: endpoints.metricsAddress, metricsScheme: endpoints.metricsSecure ? 'https' : 'http', probes: endpoints.healthProbeAddress }, 'serving endpoints')
  const stopCertWatch = opts.metricsSecure && opts.metricsCertDir ? watchCertDir(resolve(io.cwd, opts.metricsCertDir), endpoints, log, opts.metricsCertCheckMs ?? 10_000) : () => {}
  // Stopping the informers ends their wait for sync, so a signal is not ignored until they sync.
  let aborting: Promise<void> | undefined
  const abort = (): void => {
    // Nothing is in flight that must finish: requests waiting for the rate limiter end too.
    work.abort()
    aborting ??= controller.stop()
  }
  if (signal?.aborted) abort()
  signal?.addEventListener('abort', abort, { once: true })
  try {
    await revisions.start()
    await controller.start()
  } catch (err) {
    if (!(err instanceof ClusterScopedKindError)) {
      revisions.stop()
      throw err
    }
    // The chart asks for something the operator will not do: say so and exit, as for a bad chart.
    revisions.stop()
    await controller.stop()
    await endpoints.close()
    client.close()
    throw new InputError(`chart ${chartDir}: ${err.message}`)
  } finally {
    signal?.removeEventListener('abort', abort)
  }
  if (aborting) {
    revisions.stop()
    await aborting
    await endpoints.close()
    client.close()
    log.info('stopped before the caches synced')
    throw new StartAborted()
  }
  log.info('caches synced')
  // The elector has its own client: its requests are bounded by its own deadlines, and the
  // release on shutdown must pass after the controller's requests were aborted.
  const leaseClient = opts.leaderElect ? new KubeClient(kc, { userAgent: `memcached-operator/${version}`, onRequestResult: metrics.requestResult }) : undefined
  if (leaseClient) {
    let refused: string | undefined
    const leaseNamespace = opts.leaderElectionNamespace ?? ownNamespace()
    elector = new LeaderElector({
      client: leaseClient,
      namespace: leaseNamespace,
      name: opts.leaderElectionId,
      leaseDurationMs,
      renewDeadlineMs,
      retryPeriodMs,
      onStartedLeading: () => {
        log.info('became the leader')
        runtimeMetrics.setLeading(opts.leaderElectionId, true)
        led = true
        controller.runWorkers()
        rollouts?.start()
      },
      onStoppedLeading: () => {
        runtimeMetrics.setLeading(opts.leaderElectionId, false)
        lose()
      },
      onNewLeader: (identity) => log.info({ leader: identity }, 'leader observed'),
      onError: (err) => {
        const denied = leaseDenied(err)
        if (denied === undefined) return log.warn({ err: err.message }, 'leader election request failed')
        // Said once per refusal, not at every retry; readiness fails meanwhile.
        if (refused !== denied) log.error({ err: err.message, lease: `${leaseNamespace}/${opts.leaderElectionId}` }, `cannot take the leader Lease: ${denied}; this replica will never lead until its RBAC allows get, create and update on this Lease (see docs/install.md, "Sharding a large fleet")`)
        refused = denied
      },
    })
    const e = elector
    leaseRefusal = () => {
      if (e.lastError === undefined) refused = undefined
      return leaseDenied(e.lastError)
    }
    elector.start()
  } else {
    controller.runWorkers()
    rollouts?.start()
  }

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
      await Promise.all([controller.stop(), rollouts?.stop()])
      revisions.stop()
      clearTimeout(deadline)
      if (elector) {
        if (await elector.release()) log.info('released the leader lease')
        await elector.stop()
        runtimeMetrics.setLeading(opts.leaderElectionId, false)
      }
      stopCertWatch()
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

/** The refusal in a failed Lease request that retrying cannot cure (403 Forbidden, 401 Unauthorized), if it is one. */
function leaseDenied(err: Error | undefined): string | undefined {
  return err instanceof ApiError && (err.status === 403 || err.status === 401) ? err.message : undefined
}

/** The metrics server's certificate: from `dir`, or self-signed. */
async function metricsCertificate(dir: string | undefined): Promise<KeyPair> {
  if (dir === undefined) return selfSignedCertificate()
  try {
    return readCertDir(dir)
  } catch (err) {
    throw new InputError(err instanceof Error ? err.message : String(err))
  }
}

/** Re-reads a rotated certificate (a Secret's volume is updated in place), as controller-runtime's certwatcher does. */
function watchCertDir(dir: string, endpoints: Endpoints, log: Logger, everyMs: number): () => void {
  let version = certDirVersion(dir)
  const timer = setInterval(() => {
    const now = certDirVersion(dir)
    if (now === version || now === '') return
    try {
      endpoints.setMetricsCertificate(readCertDir(dir))
      version = now
      log.info({ dir }, 'reloaded the metrics certificate')
    } catch (err) {
      version = now
      log.error({ err: err instanceof Error ? err.message : String(err) }, 'cannot reload the metrics certificate; serving the previous one')
    }
  }, everyMs)
  timer.unref()
  return () => clearInterval(timer)
}
