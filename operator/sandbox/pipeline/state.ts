/** What the stages of the request pipeline share, and the engines they are given (apply, CRDs, tables). */
import { Accounting } from '../accounting.ts'
import { internalError, methodNotAllowed, notFound, resourceNotFound } from '../errors.ts'
import { Faults } from '../faults.ts'
import { Registry, groupVersion, tableOf, type TopologyFor } from '../registry.ts'
import { Store, StoredObject } from '../store.ts'
import type { Attributes, Decision } from '../auth/rbac.ts'
import type { ApiRequest, FieldCause, JsonObject, KubeObject, ResourceType, Topology } from '../types.ts'
import { type Reply, lazyJsonReply } from './reply.ts'
import { rfc3339 } from '../../kube/time.ts'

/** One field that an apply could not take from its other owner. */
export interface ApplyConflict {
  manager: string
  apiVersion: string
  /** `.spec.replicas`, `.spec.template.spec.containers[name="app"].image` */
  field: string
}

/** Options of one server-side apply. */
export interface ApplyCall {
  manager: string
  force: boolean
  topology: Topology
  apiVersion: string
  subresource?: string
  /** Top-level fields the endpoint ignores (`status` for the main resource, `spec` etc. for `/status`). */
  resetFields: string[][]
  defaulter: (obj: KubeObject) => void
}

/** The structured-merge-diff operations the handler needs (provided by the apply engine). */
export interface WriteEngine {
  apply(live: KubeObject | undefined, config: KubeObject, call: ApplyCall): { ok: true; object: KubeObject; changed: boolean } | { ok: false; conflicts: ApplyConflict[]; message: string }
  /** managedFields of a non-apply write by `manager`. */
  track(old: KubeObject | undefined, updated: KubeObject, call: { manager: string; topology: Topology; apiVersion: string; subresource?: string; resetFields: string[][] }): KubeObject
  strategicMergePatch(live: KubeObject, patch: JsonObject, topology: Topology): KubeObject
}

/** How CustomResourceDefinitions become served types (provided by the CRD module). */
export interface CrdAdapter {
  /** One type per served version. @throws when the CRD cannot be served */
  resourceTypes(crd: KubeObject): ResourceType[]
  /** The CRD's `status` given the name conflicts found (empty: NamesAccepted, Established). */
  status(crd: KubeObject, conflicts: string[]): JsonObject
  /** Server-side defaults of a CRD object. */
  default?(crd: KubeObject): void
  /** Validation of a CRD object. */
  validate?(crd: KubeObject): FieldCause[]
}

/** Renders objects as a `meta.k8s.io/v1` Table for `kubectl get`. */
export type TableRenderer = (type: ResourceType, objects: KubeObject[], opts: { includeObject: 'None' | 'Metadata' | 'Object'; resourceVersion: string; continue?: string }) => unknown

/** A mutating admission webhook of {@link Cluster.mutatingWebhooks}: changes `obj` in place. */
export type MutatingWebhook = (obj: KubeObject, request: { group: string; resource: string; operation: 'CREATE' | 'UPDATE' }) => void

/** Construction options of a {@link Cluster}. */
export interface ClusterOptions {
  readonly engine: WriteEngine
  topologyFor: TopologyFor
  /** Server-side defaulting of built-in objects (in place). */
  defaultBuiltin?: (obj: KubeObject) => void
  crd?: CrdAdapter
  table?: TableRenderer
  /** Events retained for watch resumption (default 10,000). */
  historyWindow?: number
  /** Interval of BOOKMARK events for watches that allow them (default 60 s). */
  bookmarkIntervalMs?: number
  /** Watch-lists served (`sendInitialEvents`; default true), as kube-apiserver's WatchList feature, on by default since 1.34. */
  watchList?: boolean
  /**
   * Simulated graceful termination of scheduled pods: a DELETE sets deletionTimestamp and
   * deletionGracePeriodSeconds, and the pod goes away this many ms later. 0 (default): at once.
   */
  podTerminationMs?: number
  /** kube-apiserver's `--event-ttl`: Events are deleted this long after their last write (default 1 h). */
  eventTtlMs?: number
  /** pods/resize served (default true, as Kubernetes 1.33+); false plays an older cluster (pod-resize.ts). */
  podResize?: boolean
  faults?: Faults
  accounting?: Accounting
}

/**
 * What every stage of the request pipeline shares: the storage, the served types, the engines and
 * options given at construction, and the allocations the server keeps (Service IPs). The stages are
 * functions of it (one file per stage); {@link Cluster} is the pipeline's entry.
 */
export abstract class ServerState {
  readonly store: Store
  readonly registry: Registry
  readonly faults: Faults
  readonly accounting: Accounting
  readonly engine: WriteEngine
  readonly crd: CrdAdapter | undefined
  readonly table: TableRenderer | undefined
  readonly bookmarkIntervalMs: number
  readonly watchList: boolean
  readonly podTerminationMs: number
  /** Requests answered outside the storage pipeline (reviews, TokenRequest); set by the auth layer. */
  serveExtra: ((req: ApiRequest) => Reply | undefined) | undefined
  /** OpenShift's SCC admission, restricted-v2 only (admission/scc.ts): the sandbox option `openshift`. */
  openshift = false
  /** The authorizer, for admission plugins that ask it (OwnerReferencesPermissionEnforcement); set by the auth layer. */
  authorize: ((a: Attributes) => Decision) | undefined
  /**
   * Mutating admission webhooks, in kube-apiserver's place for them: after the built-in mutating
   * plugins, before validation, on every create and update (apply included) of a request with a
   * user, not on subresources. Each may change the object in place (a registry mirror rewriting an
   * image, say); a write that ends up equal to the stored object is answered with it, its
   * resourceVersion unchanged, as kube-apiserver's no-op update is.
   */
  readonly mutatingWebhooks: MutatingWebhook[] = []
  readonly serviceIPs = new Set<string>(['10.96.0.1'])
  nextServiceIP = 10

  typeOf(req: ApiRequest): ResourceType {
    const type = this.registry.lookup(req.group, req.version, req.resource)
    if (!type) throw resourceNotFound()
    if (req.namespace && !type.namespaced) throw resourceNotFound()
    if (req.subresource !== undefined) {
      if (req.subresource === 'status' && !type.subresources.status) throw resourceNotFound()
      if (req.subresource === 'scale' && !type.subresources.scale) throw resourceNotFound()
      const podLog = req.subresource === 'log' && type.group === '' && type.resource === 'pods'
      const resize = req.subresource === 'resize' && type.subresources.resize === true
      if (req.subresource !== 'status' && req.subresource !== 'scale' && !podLog && !resize) throw resourceNotFound()
      if (resize && !['get', 'update', 'patch'].includes(req.verb)) throw methodNotAllowed()
      if (podLog && req.verb !== 'get') throw methodNotAllowed()
      if (!req.name) throw resourceNotFound()
    }
    if (!type.verbs.includes(req.verb === 'watch' ? 'watch' : req.verb)) throw methodNotAllowed()
    return type
  }

  live(type: ResourceType, namespace: string | undefined, name: string): StoredObject | undefined {
    return this.store.get(tableOf(type), type.namespaced ? (namespace ?? '') : '', name)
  }

  mustLive(type: ResourceType, req: ApiRequest): StoredObject {
    const name = req.name ?? ''
    const live = this.live(type, req.namespace, name)
    if (!live) throw notFound(type.group, type.resource, name)
    return live
  }

  /** The object's bytes at the version the client asked for (CR versions share storage). */
  jsonFor(type: ResourceType, stored: StoredObject): string {
    const gv = groupVersion(type.group, type.version)
    return stored.isAt(gv) ? stored.json : JSON.stringify({ ...stored.obj, apiVersion: gv })
  }

  /** A reply with the object's bytes, serialised only when read (most in-process writers never do). */
  objectReply(type: ResourceType, status: number, stored: StoredObject, headers?: Record<string, string>): Reply {
    return lazyJsonReply(status, () => this.jsonFor(type, stored), headers)
  }

  now(): string {
    return rfc3339()
  }

  namespace(name: string): KubeObject | undefined {
    return this.store.get('/namespaces', '', name)?.obj
  }

  syncingQuotas = false

  namespaceType(): ResourceType {
    const t = this.registry.lookup('', 'v1', 'namespaces')
    if (!t) throw internalError('namespaces are not served')
    return t
  }

  /** Namespaces whose contents are being deleted: the quota controller leaves them alone. */
  readonly emptying = new Set<string>()

  /** The first registered version of a resource: used to visit each table once. */
  storageVersionOf(t: ResourceType): string {
    return this.registry.all().find((x) => x.group === t.group && x.resource === t.resource)?.version ?? t.version
  }

  constructor(opts: ClusterOptions) {
    this.engine = opts.engine
    this.crd = opts.crd
    this.table = opts.table
    this.bookmarkIntervalMs = opts.bookmarkIntervalMs ?? 60_000
    this.watchList = opts.watchList ?? true
    this.podTerminationMs = opts.podTerminationMs ?? 0
    this.store = new Store(opts.historyWindow)
    this.registry = new Registry(opts.topologyFor, opts.defaultBuiltin)
    if (opts.podResize === false) delete this.registry.lookup('', 'v1', 'pods')?.subresources.resize
    this.faults = opts.faults ?? new Faults()
    this.accounting = opts.accounting ?? new Accounting()
  }

  /** The synchronous handler of every verb but watch (the resource quota controller writes through it). */
  abstract respond(req: ApiRequest): Reply
}
