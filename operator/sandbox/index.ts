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
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { rm } from 'node:fs/promises'
import { dirname } from 'node:path'
import { Accounting } from './accounting.ts'
import { Cluster, rfc3339, type WriteEngine, type CrdAdapter, type TableRenderer } from './cluster.ts'
import { Faults, type FaultSpec } from './faults.ts'
import { createHandler } from './http.ts'
import { writeKubeconfig } from './kubeconfig.ts'
import { serverSideApply, trackUpdate, strategicMergePatch, StrategicPatchError, builtinTopology } from './apply/index.ts'
import { defaultBuiltin } from './defaults.ts'
import { startControllers } from './controllers/index.ts'
import { resourceTypesFromCRD, crdStatus, defaultCRD, validateCRD } from './crd.ts'
import { toTable } from './table.ts'
import { badRequest } from './errors.ts'
import type { KubeObject } from './types.ts'

export type { FaultSpec } from './faults.ts'
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
  /** Where to write the kubeconfig; default a new temporary directory (removed on close). */
  kubeconfigOut?: string
  /** CRDs to create at start (they are Established when startSandbox resolves). */
  installCRDs?: KubeObject[]
  /** Events kept for watch resumption; older resourceVersions get 410 (default 10,000). */
  historyWindow?: number
  /** Interval of BOOKMARK events on watches that allow them (default 60,000 ms). */
  bookmarkIntervalMs?: number
  /**
   * Simulated graceful pod termination: deleted scheduled pods stay (with deletionTimestamp and
   * deletionGracePeriodSeconds) this many ms before they go. Default 0: deleted at once.
   */
  podTerminationMs?: number
  /** How many requests the request log keeps (default 1,000). */
  requestLogSize?: number
  /** Start the simulated kube-controller-manager and kubelet (default true). */
  controllers?: boolean
  /** Count the simulated controllers' requests in the accounting (default true). */
  accountControllers?: boolean
}

/** A running sandbox. */
export interface Sandbox {
  /** `http://127.0.0.1:<port>` */
  url: string
  port: number
  /** The kubeconfig file for kubectl and @kubernetes/client-node (context `sandbox`). */
  kubeconfigPath: string
  /** In-process API access plus store inspection (`cluster.store`, `cluster.registry`). */
  cluster: Cluster
  /** Fault settings, changeable at run time. */
  faults: Faults
  /** Request counters and log: HTTP requests, and the simulated controllers' unless `accountControllers: false`. */
  requests: Accounting
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
      return strategicMergePatch(live, patch, topology)
    } catch (e) {
      if (e instanceof StrategicPatchError) throw badRequest(e.message)
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

/** Builds a cluster (no HTTP) with the real engines: what tests of the core use. */
export function createCluster(opts: { faults?: FaultSpec | string; historyWindow?: number; bookmarkIntervalMs?: number; podTerminationMs?: number; accounting?: Accounting } = {}): Cluster {
  const o: ConstructorParameters<typeof Cluster>[0] = { engine: applyEngine, topologyFor: builtinTopology, defaultBuiltin: (obj) => defaultBuiltin(obj), crd: crdAdapter, table: tableRenderer, faults: new Faults(opts.faults) }
  if (opts.historyWindow !== undefined) o.historyWindow = opts.historyWindow
  if (opts.bookmarkIntervalMs !== undefined) o.bookmarkIntervalMs = opts.bookmarkIntervalMs
  if (opts.podTerminationMs !== undefined) o.podTerminationMs = opts.podTerminationMs
  if (opts.accounting) o.accounting = opts.accounting
  return new Cluster(o)
}

/** Starts a sandbox API server on loopback and writes its kubeconfig. */
export async function startSandbox(opts: SandboxOptions = {}): Promise<Sandbox> {
  const cOpts: Parameters<typeof createCluster>[0] = {}
  if (opts.faults !== undefined) cOpts.faults = opts.faults
  if (opts.historyWindow !== undefined) cOpts.historyWindow = opts.historyWindow
  if (opts.bookmarkIntervalMs !== undefined) cOpts.bookmarkIntervalMs = opts.bookmarkIntervalMs
  if (opts.podTerminationMs !== undefined) cOpts.podTerminationMs = opts.podTerminationMs
  cOpts.accounting = new Accounting(opts.requestLogSize)
  const cluster = createCluster(cOpts)
  for (const crd of opts.installCRDs ?? []) {
    const res = cluster.respond({ verb: 'create', group: 'apiextensions.k8s.io', version: 'v1', resource: 'customresourcedefinitions', body: structuredClone(crd), query: new URLSearchParams(), userAgent: 'sandbox' })
    if (res.status !== 201) throw new Error(`cannot install CRD ${crd.metadata.name ?? ''}: ${res.json ?? JSON.stringify(res.body)}`)
  }
  let address = ''
  const server: Server = createServer(createHandler(cluster, () => address))
  server.keepAliveTimeout = 65_000
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
  const kubeconfigPath = await writeKubeconfig(url, opts.kubeconfigOut)
  const controllers = opts.controllers === false ? undefined : startControllers(cluster, { podReadyDelayMs: opts.podReadyDelayMs ?? 1000, account: opts.accountControllers ?? true })
  let closed = false
  return {
    url,
    port,
    kubeconfigPath,
    cluster,
    faults: cluster.faults,
    requests: cluster.accounting,
    async close() {
      if (closed) return
      closed = true
      await controllers?.stop()
      cluster.faults.close()
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
      if (opts.kubeconfigOut === undefined) await rm(dirname(kubeconfigPath), { recursive: true, force: true })
    },
  }
}
