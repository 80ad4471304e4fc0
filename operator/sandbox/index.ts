/**
 * The sandbox cluster: an in-process Kubernetes API server on loopback.
 *
 * ```ts
 * const sandbox = await startSandbox({ faults: 'latency-ms=5' })
 * // kubectl --kubeconfig sandbox.kubeconfigPath get ns
 * const res = await sandbox.cluster.handle({ verb: 'list', group: 'apps', version: 'v1', resource: 'deployments', namespace: 'default', query: new URLSearchParams() })
 * sandbox.requests.counts().byVerb.patch
 * await sandbox.close()
 * ```
 */
import { OPENSHIFT_DEFAULT_RANGES, SCC_CRD } from './admission/scc.ts'
import { createServer, type Server } from 'node:http'
import { createServer as createTlsServer } from 'node:https'
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net'
import { rm } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { Accounting } from './accounting.ts'
import { Cluster, type WriteEngine, type CrdAdapter, type TableRenderer } from './cluster.ts'
import { Faults, type FaultSpec } from './faults.ts'
import { PodFailures, type PodFailureRule } from './controllers/pod-failures.ts'
import { withPodFailures } from './controllers/pod-failures-http.ts'
import { createHandler } from './http.ts'
import { writeKubeconfig } from './kubeconfig.ts'
import { sandboxCert, sandboxKey } from './tls.ts'
import { serverSideApply, trackUpdate, strategicMergePatch, StrategicPatchError, builtinTopology, builtinPatchMeta } from './apply/index.ts'
import { defaultBuiltin } from '../kube/builtin/defaults.ts'
import { startControllers } from './controllers/index.ts'
import { resourceTypesFromCRD, crdStatus, defaultCRD, validateCRD } from './crd.ts'
import { toTable } from './table.ts'
import { badRequest, StatusError } from './errors.ts'
import type { KubeObject } from './types.ts'
import { Auth, type AuthOptions, type IdentitySpec } from './auth/index.ts'
import { rfc3339 } from '../kube/time.ts'

export type { FaultSpec } from './faults.ts'
export type { PodFailureRule, PodFailureMode } from './controllers/pod-failures.ts'
export type { IdentitySpec, UserInfo } from './auth/index.ts'
export type { RequestCounts, RequestRecord } from './accounting.ts'
export { Cluster } from './cluster.ts'

/** Options of {@link startSandbox}. */
export interface SandboxOptions {
  /** TCP port; 0 or undefined picks a free one. */
  port?: number
  /** Listen address; only loopback is supported. */
  host?: '127.0.0.1'
  /** Initial fault settings (`error-rate=0.05,latency-ms=20` or an object); see faults.ts. */
  faults?: FaultSpec | string
  /** Delay before simulated pods become Ready (passed to the controllers; default 1,000 ms). */
  podReadyDelayMs?: number
  /** Containers whose image matches a rule fail as a kubelet reports it (controllers/pod-failures.ts); changeable with `sandbox.podFailures.set`. */
  podFailures?: PodFailureRule[]
  /** Where to write the kubeconfig; default a new temporary directory (removed on close). */
  kubeconfigOut?: string
  /** CRDs to create at start (they are Established when startSandbox resolves). */
  installCRDs?: KubeObject[]
  /** Events kept for watch resumption; older resourceVersions get 410 (default 10,000). */
  historyWindow?: number
  /** Interval of BOOKMARK events on watches that allow them (default 60,000 ms). */
  bookmarkIntervalMs?: number
  /** Serve watch-lists (`sendInitialEvents=true`; default true); false refuses them with 422, as kube-apiserver before 1.34 does by default. */
  watchList?: boolean
  /**
   * Simulated graceful pod termination: deleted scheduled pods stay (with deletionTimestamp and
   * deletionGracePeriodSeconds) this many ms before they go. Default 0: deleted at once.
   */
  podTerminationMs?: number
  /** kube-apiserver's `--event-ttl`: Events are deleted this long after their last write (default 3,600,000 ms, an hour). */
  eventTtlMs?: number
  /** Serve pods/resize (in-place pod resize; default true, as Kubernetes 1.33+); false plays an older cluster. */
  podResize?: boolean
  /** How many requests the request log keeps (default 1,000). */
  requestLogSize?: number
  /** Start the simulated kube-controller-manager and kubelet (default true). */
  controllers?: boolean
  /** Count the simulated controllers' requests in the accounting (default true). */
  accountControllers?: boolean
  /**
   * Requests without a bearer token act as `system:anonymous` (`--anonymous-auth=true`); by
   * default they are answered 401.
   */
  anonymous?: boolean
  /** Static bearer tokens besides the kubeconfig's (`--token-auth-file`). */
  tokens?: AuthOptions['tokens']
  /**
   * Act as OpenShift where a Memcached's pods meet it: serve SecurityContextConstraints
   * (security.openshift.io/v1, a CRD) and admit Pods as the restricted-v2 SCC does (admission/scc.ts).
   */
  openshift?: boolean
}

/** A running sandbox. */
export interface Sandbox {
  /** `http://127.0.0.1:<port>`: plain HTTP, for clients that send `Authorization: Bearer <token>` themselves (curl, fetch). */
  url: string
  /** `https://127.0.0.1:<port>`: the same port with TLS, the kubeconfig's server (kubectl sends credentials only over TLS). */
  httpsUrl: string
  port: number
  /** The kubeconfig file for kubectl and @kubernetes/client-node (context `sandbox`, cluster-admin). */
  kubeconfigPath: string
  /** In-process API access plus store inspection (`cluster.store`, `cluster.registry`). */
  cluster: Cluster
  /** Fault settings, changeable at run time. */
  faults: Faults
  /** Rules that make pods fail as a kubelet would (controllers/pod-failures.ts), changeable at run time. */
  podFailures: PodFailures
  /** Request counters and log: HTTP requests, and the simulated controllers' unless `accountControllers: false`. */
  requests: Accounting
  /** Authentication and authorization of the HTTP requests. */
  auth: Auth
  /** A new bearer token for a user (`system:serviceaccount:<ns>:<name>` for a ServiceAccount) and its groups. */
  issueToken(identity: IdentitySpec): string
  /**
   * Writes a kubeconfig that acts as `identity` (to `path`, else to a file in the sandbox's
   * temporary directory) and returns its path.
   */
  kubeconfigFor(identity: IdentitySpec, path?: string): Promise<string>
  /** Stops the server, cuts open watches, stops controllers, removes a temporary kubeconfig. */
  close(): Promise<void>
}

/** The apply engine of `./apply`, adapted to the handler's interface. */
export const applyEngine: WriteEngine = {
  apply(live, config, call) {
    const opts: Parameters<typeof serverSideApply>[2] = { manager: call.manager, force: call.force, topology: call.topology, now: rfc3339(), apiVersion: call.apiVersion, resetFields: call.resetFields, defaulter: call.defaulter }
    if (call.subresource) opts.subresource = call.subresource
    return serverSideApply(live, config, opts)
  },
  track(old, updated, call) {
    const opts: Parameters<typeof trackUpdate>[2] = { manager: call.manager, topology: call.topology, now: rfc3339(), apiVersion: call.apiVersion, resetFields: call.resetFields }
    if (call.subresource) opts.subresource = call.subresource
    return trackUpdate(old, updated, opts)
  },
  strategicMergePatch(live, patch, topology) {
    try {
      // The patch metadata is the kind's Go struct tags, as upstream's definitions carry them.
      const [group, version] = live.apiVersion.includes('/') ? live.apiVersion.split('/') : ['', live.apiVersion]
      return strategicMergePatch(live, patch, builtinPatchMeta(group ?? '', version ?? '', live.kind, topology))
    } catch (e) {
      // apiserver interpretStrategicMergePatchError: 400 for a malformed patch, 422 for lists of
      // lists, and any other merge error unconverted (500, no reason).
      if (e instanceof StrategicPatchError) {
        if (e.status === 400) throw badRequest(e.message)
        if (e.status === 422) throw new StatusError(422, 'Invalid', 'the server rejected our request due to an error in our request')
        throw new StatusError(500, '', e.message)
      }
      throw e
    }
  },
}

/** CRD handling of `./crd.ts`. */
export const crdAdapter: CrdAdapter = {
  resourceTypes: resourceTypesFromCRD,
  status: crdStatus,
  default: defaultCRD,
  validate: validateCRD,
}

/** Table rendering of `./table.ts`. */
export const tableRenderer: TableRenderer = (type, objects, opts) => {
  const meta: { resourceVersion: string; continue?: string } = { resourceVersion: opts.resourceVersion }
  if (opts.continue) meta.continue = opts.continue
  return toTable(type, objects, meta, opts.includeObject)
}

type ClusterOpts = { faults?: FaultSpec | string; historyWindow?: number; bookmarkIntervalMs?: number; watchList?: boolean; podTerminationMs?: number; eventTtlMs?: number; podResize?: boolean; accounting?: Accounting }

/** A cluster with its authentication and authorization, the bootstrap RBAC policy stored. */
function createAuthorizedCluster(opts: ClusterOpts, authOpts: AuthOptions = {}): { cluster: Cluster; auth: Auth } {
  const o: ConstructorParameters<typeof Cluster>[0] = { engine: applyEngine, topologyFor: builtinTopology, defaultBuiltin: (obj) => defaultBuiltin(obj), crd: crdAdapter, table: tableRenderer, faults: new Faults(opts.faults) }
  if (opts.historyWindow !== undefined) o.historyWindow = opts.historyWindow
  if (opts.bookmarkIntervalMs !== undefined) o.bookmarkIntervalMs = opts.bookmarkIntervalMs
  if (opts.watchList !== undefined) o.watchList = opts.watchList
  if (opts.podTerminationMs !== undefined) o.podTerminationMs = opts.podTerminationMs
  if (opts.eventTtlMs !== undefined) o.eventTtlMs = opts.eventTtlMs
  if (opts.podResize !== undefined) o.podResize = opts.podResize
  if (opts.accounting) o.accounting = opts.accounting
  const cluster = new Cluster(o)
  const auth = new Auth(cluster, authOpts)
  cluster.serveExtra = (req) => auth.serve(req)
  cluster.authorize = (a) => auth.authorizer.authorize(a)
  auth.bootstrap()
  return { cluster, auth }
}

/**
 * Builds a cluster (no HTTP) with the real engines: what tests of the core use. It has the
 * bootstrap RBAC policy; its in-process requests are not authorized (they act as the server).
 */
export function createCluster(opts: ClusterOpts = {}): Cluster {
  return createAuthorizedCluster(opts).cluster
}

/** Starts a sandbox API server on loopback and writes its kubeconfig. */
export async function startSandbox(opts: SandboxOptions = {}): Promise<Sandbox> {
  const cOpts: Parameters<typeof createCluster>[0] = {}
  if (opts.faults !== undefined) cOpts.faults = opts.faults
  if (opts.historyWindow !== undefined) cOpts.historyWindow = opts.historyWindow
  if (opts.bookmarkIntervalMs !== undefined) cOpts.bookmarkIntervalMs = opts.bookmarkIntervalMs
  if (opts.watchList !== undefined) cOpts.watchList = opts.watchList
  if (opts.podTerminationMs !== undefined) cOpts.podTerminationMs = opts.podTerminationMs
  if (opts.eventTtlMs !== undefined) cOpts.eventTtlMs = opts.eventTtlMs
  if (opts.podResize !== undefined) cOpts.podResize = opts.podResize
  cOpts.accounting = new Accounting(opts.requestLogSize)
  const authOpts: AuthOptions = {}
  if (opts.anonymous !== undefined) authOpts.anonymous = opts.anonymous
  if (opts.tokens !== undefined) authOpts.tokens = opts.tokens
  const { cluster, auth } = createAuthorizedCluster(cOpts, authOpts)
  if (opts.openshift) {
    cluster.openshift = true
    // OpenShift's cluster-policy-controller gives every namespace its ranges; the sandbox gives
    // `default` one at start, and a namespace created later must carry its own (README).
    const res = cluster.respond({ verb: 'patch', group: '', version: 'v1', resource: 'namespaces', name: 'default', contentType: 'application/merge-patch+json', body: { metadata: { annotations: OPENSHIFT_DEFAULT_RANGES } }, query: new URLSearchParams(), userAgent: 'sandbox' })
    if (res.status !== 200) throw new Error(`cannot annotate namespace default: ${res.json ?? JSON.stringify(res.body)}`)
  }
  for (const crd of [...(opts.openshift ? [SCC_CRD] : []), ...(opts.installCRDs ?? [])]) {
    const res = cluster.respond({ verb: 'create', group: 'apiextensions.k8s.io', version: 'v1', resource: 'customresourcedefinitions', body: structuredClone(crd), query: new URLSearchParams(), userAgent: 'sandbox' })
    if (res.status !== 201) throw new Error(`cannot install CRD ${crd.metadata.name ?? ''}: ${res.json ?? JSON.stringify(res.body)}`)
  }
  let address = ''
  const podFailures = new PodFailures(opts.podFailures)
  const handler = withPodFailures(createHandler(cluster, () => address, auth), podFailures)
  const plain: Server = createServer(handler)
  const tls = createTlsServer({ cert: sandboxCert, key: sandboxKey }, handler)
  plain.keepAliveTimeout = 65_000
  tls.keepAliveTimeout = 65_000
  // One port, both protocols: a TLS connection starts with a handshake record (0x16).
  const sockets = new Set<Socket>()
  const server = createNetServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.once('data', (first: Buffer) => {
      socket.pause()
      socket.unshift(first)
      ;(first[0] === 0x16 ? tls : plain).emit('connection', socket)
      process.nextTick(() => socket.resume())
    })
    socket.on('error', () => socket.destroy())
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  const port = (server.address() as AddressInfo).port
  address = `127.0.0.1:${port}`
  const url = `http://${address}`
  const httpsUrl = `https://${address}`
  const kubeconfigPath = await writeKubeconfig(httpsUrl, opts.kubeconfigOut)
  const controllers = opts.controllers === false ? undefined : startControllers(cluster, { podReadyDelayMs: opts.podReadyDelayMs ?? 1000, account: opts.accountControllers ?? true, podFailures })
  let closed = false
  let issued = 0
  return {
    url,
    httpsUrl,
    port,
    kubeconfigPath,
    cluster,
    faults: cluster.faults,
    podFailures,
    requests: cluster.accounting,
    auth,
    issueToken: (identity) => auth.issueToken(identity),
    async kubeconfigFor(identity, path) {
      const file = path ?? join(dirname(kubeconfigPath), `kubeconfig-${++issued}`)
      return writeKubeconfig(httpsUrl, file, auth.issueToken(identity))
    },
    async close() {
      if (closed) return
      closed = true
      await controllers?.stop()
      cluster.faults.close()
      cluster.close()
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        for (const s of sockets) s.destroy()
      })
      if (opts.kubeconfigOut === undefined) await rm(dirname(kubeconfigPath), { recursive: true, force: true })
    },
  }
}
