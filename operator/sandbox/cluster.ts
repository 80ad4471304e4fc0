/**
 * The request handler core of the sandbox API server: one synchronous pipeline per verb
 * (create, update, patch, apply, delete, get, list, watch) over the {@link Store}, with the
 * semantics of kube-apiserver described in the reference (resourceVersion, generation,
 * status/scale subresources, finalizers, managedFields, defaulting, CRD registration).
 *
 * Writes are synchronous from request to store, so two requests can never interleave between
 * the optimistic-concurrency check and the write — as etcd's compare-and-swap guarantees.
 */
import { resizedPod, validateResize } from './pod-resize.ts'
import { rbacNameProblem } from './auth/rbac-api.ts'
import { isDNS1035Label, isDNS1123Label, isDNS1123Subdomain } from './naming.ts'
import { randomUUID } from 'node:crypto'
import jsonpatch from 'fast-json-patch'
import type { Operation } from 'fast-json-patch'
import { parse as parseYaml } from 'yaml'
import { Accounting } from './accounting.ts'
import { deepEqual, isObject, wireCopy } from './apply/json.ts'
import {
  StatusError,
  alreadyExists,
  badRequest,
  conflict,
  deleteSuccess,
  forbidden,
  internalError,
  invalid,
  invalidObject,
  invalidOptions,
  methodNotAllowed,
  namespaceNotFound,
  notFound,
  resourceNotFound,
  unsupportedMediaType,
  expired,
} from './errors.ts'
import { Faults, type FaultTarget } from './faults.ts'
import { contentTypeOf, convertBody, negotiateOutput, type OutputTarget } from './negotiation.ts'
import { escapeFieldValue, fieldsOf, formatLabelSelector, parseFieldSelector, parseLabelSelector, SelectorError, type Selector } from './labels.ts'
import { Registry, groupVersion, tableOf, type TopologyFor } from './registry.ts'
import { Store, StoredObject, type StoreEvent } from './store.ts'
import { BookmarkGate, pageOf, sendInitialEventsOf, validateListOptions } from './list-watch.ts'
import { EVENT_TABLES, EventTtl } from './event-ttl.ts'
import { admitNamespaceLifecycle } from './admission/namespace.ts'
import { admitOwnerReferences } from './admission/ownerreferences.ts'
import type { Attributes, Decision } from './auth/rbac.ts'
import { admitPodSecurity } from './admission/podsecurity.ts'
import { admitRestrictedV2 } from './admission/scc.ts'
import { admitQuota, quotaStatus, type QuotaStore } from './admission/quota.ts'
import { prepareService } from './service.ts'
import { goJson, goValue, invalid as invalidCause, uidChange, validateBuiltin, validateMetadata } from './validation.ts'
import { applyErrorText } from '../kube/openapi-validate.ts'
import type { ApiRequest, ApiResponse, ClusterAccess, FieldCause, Json, JsonObject, KubeObject, ResourceType, Topology, WatchEvent } from './types.ts'

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
  engine: WriteEngine
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

/** An answer of the handler: the body either as an object or already serialised. */
export interface Reply {
  status: number
  headers?: Record<string, string>
  body?: unknown
  json?: string
  /** A plain-text body (pod logs). */
  text?: string
}

/** Where a watch delivers its events; `json` is the serialised object. */
export interface WatchSink {
  event(type: WatchEvent['type'], json: string): void
  /** When given, objects stored at the version watched are delivered through it, shared and frozen, rather than serialised. */
  object?(type: WatchEvent['type'], obj: KubeObject): void
  /** The server ended the watch (timeout, expiry); not called after the caller's own stop. */
  close(): void
}

const endpointsDeprecated = 'v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice'
const jsonPatchType = 'application/json-patch+json'
const mergePatchType = 'application/merge-patch+json'
const strategicPatchType = 'application/strategic-merge-patch+json'
const applyPatchType = 'application/apply-patch+yaml'
const applyPatchCbor = 'application/apply-patch+cbor'

/** Patch type name used in accounting. */
export function patchTypeOf(contentType: string | undefined): string | undefined {
  const ct = (contentType ?? '').split(';')[0]?.trim()
  if (ct === jsonPatchType) return 'json'
  if (ct === mergePatchType) return 'merge'
  if (ct === strategicPatchType) return 'strategic'
  if (ct === applyPatchType || ct === applyPatchCbor) return 'apply'
  return undefined
}

let memoSecond = -1
let memoText = ''

/** RFC 3339 with seconds, as metav1.Time serialises; the current time's text is reused within a second. */
export function rfc3339(d?: Date): string {
  if (d) return d.toISOString().replace(/\.\d{3}Z$/, 'Z')
  const second = Math.floor(Date.now() / 1000)
  if (second !== memoSecond) {
    memoSecond = second
    memoText = new Date(second * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z')
  }
  return memoText
}



/**
 * What the round trip through ObjectMeta does to metadata on a real server: its maps and lists are
 * `omitempty`, so `labels: {}`, `annotations: {}`, `finalizers: []`, `ownerReferences: []` vanish.
 * Built-ins go through Go types when a body is decoded; custom resources through
 * apiextensions-apiserver's schema/objectmeta Coerce, on decoding and on encoding for storage.
 * A merge patch such as kubectl diff's `{"metadata":{"annotations":{}}}` thus stores nothing.
 */
function dropEmptyMetadata(m: KubeObject['metadata']): void {
  for (const k of ['labels', 'annotations'] as const) {
    const v = m[k]
    if (isObject(v) && Object.keys(v).length === 0) delete m[k]
  }
  for (const k of ['finalizers', 'ownerReferences'] as const) {
    const v = m[k]
    if (Array.isArray(v) && v.length === 0) delete m[k]
  }
}

/** Equality of two objects ignoring metadata.resourceVersion (and managedFields unless asked). */
function sameObject(a: KubeObject, b: KubeObject, withManagedFields: boolean): boolean {
  const { metadata: ma, ...ra } = a
  const { metadata: mb, ...rb } = b
  if (!deepEqual(ra, rb)) return false
  const { resourceVersion: _ra, managedFields: fa, ...xa } = ma
  const { resourceVersion: _rb, managedFields: fb, ...xb } = mb
  if (!deepEqual(xa, xb)) return false
  // A write that changes nothing but managedFields timestamps is no write: kube-apiserver's
  // registry reverts the timestamps (fieldmanager.IgnoreManagedFieldsTimestampsTransformer, after
  // admission), e.g. when a mutating webhook turned an apply's change back into what was stored.
  const untimed = (f: unknown[] | undefined) => (f ?? []).map((e) => (isObject(e) ? { ...e, time: undefined } : e))
  return !withManagedFields || deepEqual(untimed(fa), untimed(fb))
}

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {}
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k]
    else out[k] = mergePatch(out[k], v)
  }
  return out
}

function getPath(obj: unknown, path: string): unknown {
  let cur = obj
  for (const part of path.split('.').filter((p) => p !== '')) cur = isObject(cur) ? cur[part] : undefined
  return cur
}

function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.').filter((p) => p !== '')
  let cur = obj
  for (const part of parts.slice(0, -1)) {
    if (!isObject(cur[part])) cur[part] = {}
    cur = cur[part] as Record<string, unknown>
  }
  const last = parts[parts.length - 1]
  if (last !== undefined) cur[last] = value
}

/** The validation messages for an object name (ValidateObjectMeta's name function per kind); empty when valid. */
function nameProblems(type: ResourceType, name: string): string[] {
  if (type.group === 'rbac.authorization.k8s.io') {
    const p = rbacNameProblem(name)
    return p === undefined ? [] : [p]
  }
  // Namespaces and StatefulSets (room for the pods' ordinal suffix) are DNS labels, Services DNS-1035 labels.
  if (type.kind === 'Namespace' && type.group === '') return isDNS1123Label(name)
  if (type.kind === 'StatefulSet' && type.group === 'apps') return isDNS1123Label(name)
  if (type.kind === 'Service' && type.group === '') return isDNS1035Label(name)
  return isDNS1123Subdomain(name)
}

const generateAlphabet = 'bcdfghjklmnpqrstvwxz2456789'

/** A pod's QoS class from its containers' resources (simplified: Guaranteed needs equal cpu and memory). */
function qosClass(pod: KubeObject): string {
  const containers = (getPath(pod, 'spec.containers') as { resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> } }[] | undefined) ?? []
  let any = false
  let guaranteed = containers.length > 0
  for (const c of containers) {
    const req = c.resources?.requests ?? {}
    const lim = c.resources?.limits ?? {}
    if (Object.keys(req).length > 0 || Object.keys(lim).length > 0) any = true
    for (const r of ['cpu', 'memory']) {
      if (lim[r] === undefined || (req[r] !== undefined && req[r] !== lim[r])) guaranteed = false
    }
  }
  return guaranteed ? 'Guaranteed' : any ? 'Burstable' : 'BestEffort'
}

interface WatchFilter {
  namespace: string | undefined
  labels: Selector
  fields: Selector & { fields: string[] }
}

/** {@link matchesFilter} for a stored object, without parsing it when only the namespace is asked for. */
function storedMatches(f: WatchFilter, stored: StoredObject): boolean {
  if (f.namespace && stored.namespace !== f.namespace) return false
  return (f.labels.empty && f.fields.empty) || matchesFilter(f, stored.obj)
}

function matchesFilter(f: WatchFilter, obj: KubeObject): boolean {
  if (f.namespace && obj.metadata.namespace !== f.namespace) return false
  if (!f.labels.empty && !f.labels.matches(obj.metadata.labels)) return false
  if (!f.fields.empty && !f.fields.matches(fieldsOf(obj, f.fields.fields))) return false
  return true
}

function headerMap(headers: Record<string, string> | undefined, warnings: string[]): Record<string, string> | undefined {
  if (warnings.length === 0) return headers
  return { ...headers, Warning: warnings.map((w) => `299 - ${JSON.stringify(w)}`).join(', ') }
}

/** The in-process API server; implements {@link ClusterAccess}. */
export class Cluster implements ClusterAccess {
  readonly store: Store
  readonly registry: Registry
  readonly faults: Faults
  readonly accounting: Accounting
  #engine: WriteEngine
  #crd: CrdAdapter | undefined
  #table: TableRenderer | undefined
  #bookmarkIntervalMs: number
  #watchList: boolean
  #podTerminationMs: number
  readonly #eventTtl: EventTtl
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
  #serviceIPs = new Set<string>(['10.96.0.1'])
  #nextServiceIP = 10

  constructor(opts: ClusterOptions) {
    this.#engine = opts.engine
    this.#crd = opts.crd
    this.#table = opts.table
    this.#bookmarkIntervalMs = opts.bookmarkIntervalMs ?? 60_000
    this.#watchList = opts.watchList ?? true
    this.#podTerminationMs = opts.podTerminationMs ?? 0
    this.store = new Store(opts.historyWindow)
    this.registry = new Registry(opts.topologyFor, opts.defaultBuiltin)
    if (opts.podResize === false) delete this.registry.lookup('', 'v1', 'pods')?.subresources.resize
    // An expired Event goes as any removal goes (the namespace's quota usage follows).
    const eventTypes = new Map(EVENT_TABLES.map((table) => [table, this.registry.all().find((t) => tableOf(t) === table)]))
    this.#eventTtl = new EventTtl(this.store, opts.eventTtlMs ?? 60 * 60_000, (table, namespace, name) => {
      const type = eventTypes.get(table)
      if (type !== undefined) this.#removeNow(type, namespace, name)
    })
    this.faults = opts.faults ?? new Faults()
    this.accounting = opts.accounting ?? new Accounting()
    const crdType = this.registry.lookup('apiextensions.k8s.io', 'v1', 'customresourcedefinitions')
    const adapter = opts.crd
    if (crdType && adapter) {
      const builtinDefault = crdType.default
      crdType.default = (o) => {
        builtinDefault?.(o)
        adapter.default?.(o)
      }
      if (adapter.validate) crdType.validate = (o) => adapter.validate?.(o) ?? []
    }
    for (const ns of ['default', 'kube-system']) {
      const reply = this.respond({ verb: 'create', group: '', version: 'v1', resource: 'namespaces', body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, query: new URLSearchParams(), userAgent: 'kube-apiserver' })
      if (reply.status !== 201) throw new Error(`cannot create namespace ${ns}: ${reply.json ?? JSON.stringify(reply.body)}`)
    }
  }

  /** Stops the server's own timers (the Events' TTL). */
  close(): void {
    this.#eventTtl.close()
  }

  // ---------------------------------------------------------------- entry points

  /**
   * In-process request: no faults, no accounting unless asked. The request body is copied (the
   * caller may keep mutating it) and the response body is the caller's own copy.
   */
  async handle(req: ApiRequest): Promise<ApiResponse> {
    // The body as it would arrive over HTTP (binary bodies as they are).
    if (req.body !== null && typeof req.body === 'object') req = { ...req, body: ArrayBuffer.isView(req.body) ? structuredClone(req.body) : wireCopy(req.body) }
    const reply = await this.dispatch(req, { faults: req.injectFaults === true, account: req.account === true })
    const res = { status: reply.status } as ApiResponse
    // Whether the reply carries bytes, without making them (lazyJsonReply).
    const bytes = Object.getOwnPropertyDescriptor(reply, 'json')
    if (bytes === undefined || (bytes.get === undefined && bytes.value === undefined)) res.body = reply.text ?? reply.body
    else {
      // Serialised and parsed when first read: most in-process writers never look at the object
      // sent back.
      let parsed: unknown
      let done = false
      Object.defineProperty(res, 'body', {
        enumerable: true,
        configurable: true,
        get: () => {
          if (!done) {
            parsed = JSON.parse(reply.json as string)
            done = true
          }
          return parsed
        },
        set: (v: unknown) => {
          parsed = v
          done = true
        },
      })
    }
    if (reply.headers) res.headers = reply.headers
    return res
  }

  /** Runs a request through faults (pause, latency, injected errors) and accounting. */
  async dispatch(req: ApiRequest, mode: { faults: boolean; account: boolean }): Promise<Reply> {
    const target: FaultTarget = { verb: req.verb, group: req.group, resource: req.resource, subresource: req.subresource, namespace: req.namespace, name: req.name, user: req.user?.username }
    let reply: Reply | undefined
    if (mode.faults) {
      await this.faults.whenUnpaused()
      const ms = this.faults.latencyFor(target)
      if (ms > 0) await new Promise((r) => setTimeout(r, ms))
      const err = this.faults.errorFor(target)
      if (err) {
        // A timeout is answered after the write was carried out: its own answer is lost.
        if (err.afterWrite) this.respond(req)
        reply = errorReply(err)
      }
    }
    reply ??= this.respond(req)
    if (mode.account) this.account(req, reply.status)
    // KEP-4974: every request for core/v1 Endpoints is warned about since 1.33.
    if (req.group === '' && req.resource === 'endpoints') reply = withHeaders(reply, headerMap(reply.headers, [endpointsDeprecated]) ?? {})
    return reply
  }

  #clock = { ms: 0, iso: '' }

  /** Records a request in the accounting. */
  account(req: ApiRequest, code: number): void {
    // Requests come many to the millisecond: the time is formatted once per millisecond.
    const ms = Date.now()
    if (ms !== this.#clock.ms) this.#clock = { ms, iso: new Date(ms).toISOString() }
    const rec: Parameters<Accounting['record']>[0] = { time: this.#clock.iso, verb: req.verb, group: req.group, resource: req.resource, code }
    if (req.subresource) rec.subresource = req.subresource
    if (req.namespace) rec.namespace = req.namespace
    if (req.name) rec.name = req.name
    const pt = req.verb === 'patch' ? patchTypeOf(req.contentType) : undefined
    if (pt) rec.patchType = pt
    const isWrite = req.verb === 'create' || req.verb === 'update' || req.verb === 'patch'
    if (isWrite) rec.fieldManager = managerOf(req)
    if (req.verb === 'list' || req.verb === 'watch') {
      const labels = req.query.get('labelSelector')
      if (labels) rec.labelSelector = labels
      const fields = req.query.get('fieldSelector')
      if (fields) rec.fieldSelector = fields
    }
    if (req.userAgent) rec.userAgent = req.userAgent
    this.accounting.record(rec)
  }

  /**
   * The synchronous handler: every verb but watch. Never throws. It takes ownership of
   * `req.body` (parts of it may be stored): pass a body nobody mutates afterwards.
   */
  respond(req: ApiRequest): Reply {
    try {
      return this.#respond(req)
    } catch (e) {
      if (e instanceof StatusError) return errorReply(e)
      if (e instanceof SelectorError) return errorReply(badRequest(e.message))
      return errorReply(internalError(e instanceof Error ? e.message : String(e)))
    }
  }

  #respond(req: ApiRequest): Reply {
    const extra = this.serveExtra?.(req)
    if (extra) return extra
    const type = this.#typeOf(req)
    // Negotiated before the request is served, as the handlers do (a 406 changes nothing).
    const target = negotiateOutput(req.accept)
    const reply = this.#serve(type, req)
    return target && target.kind !== 'Table' ? this.#converted(type, reply, target) : reply
  }

  /** A 2xx JSON answer as PartialObjectMetadata(List) (see negotiation.ts). */
  #converted(type: ResourceType, reply: Reply, target: OutputTarget): Reply {
    if (reply.status < 200 || reply.status > 299 || reply.json === undefined) return reply
    return { ...reply, json: convertBody(reply.json, type, target), headers: { ...reply.headers, 'Content-Type': contentTypeOf(target) } }
  }

  #serve(type: ResourceType, req: ApiRequest): Reply {
    const q = req.query
    switch (req.verb) {
      case 'get':
        if (req.subresource === 'scale') return this.#getScale(type, req)
        if (req.subresource === 'log') return this.#podLog(type, req)
        // pods/resize reads the pod (the registry's resize REST returns it whole).
        return this.#get(type, req)
      case 'list':
        return this.#list(type, req)
      case 'create':
        if (req.name || req.subresource) throw methodNotAllowed()
        return this.#create(type, req)
      case 'update':
        if (req.subresource === 'scale') return this.#updateScale(type, req, req.body)
        return this.#update(type, req)
      case 'patch':
        if (q.has('force') && patchTypeOf(req.contentType) !== 'apply')
          throw invalidOptions('PatchOptions', [{ reason: 'FieldValueForbidden', field: 'force', message: 'Forbidden: may not be specified for non-apply patch' }])
        if (req.subresource === 'scale') return this.#patchScale(type, req)
        return this.#patch(type, req)
      case 'delete':
        if (req.subresource) throw methodNotAllowed()
        return this.#deleteOne(type, req)
      case 'deletecollection':
        return this.#deleteCollection(type, req)
      case 'watch':
        throw badRequest('watch requests are served by watch()')
    }
  }

  #typeOf(req: ApiRequest): ResourceType {
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

  // ---------------------------------------------------------------- reads

  #live(type: ResourceType, namespace: string | undefined, name: string): StoredObject | undefined {
    return this.store.get(tableOf(type), type.namespaced ? (namespace ?? '') : '', name)
  }

  #mustLive(type: ResourceType, req: ApiRequest): StoredObject {
    const name = req.name ?? ''
    const live = this.#live(type, req.namespace, name)
    if (!live) throw notFound(type.group, type.resource, name)
    return live
  }

  /** The object's bytes at the version the client asked for (CR versions share storage). */
  #jsonFor(type: ResourceType, stored: StoredObject): string {
    const gv = groupVersion(type.group, type.version)
    return stored.isAt(gv) ? stored.json : JSON.stringify({ ...stored.obj, apiVersion: gv })
  }

  /** A reply with the object's bytes, serialised only when read (most in-process writers never do). */
  #objectReply(type: ResourceType, status: number, stored: StoredObject, headers?: Record<string, string>): Reply {
    return lazyJsonReply(status, () => this.#jsonFor(type, stored), headers)
  }

  #wantsTable(req: ApiRequest): boolean {
    return this.#table !== undefined && negotiateOutput(req.accept)?.kind === 'Table'
  }

  #tableReply(type: ResourceType, req: ApiRequest, objects: KubeObject[], cont?: string): Reply {
    const includeObject = (req.query.get('includeObject') ?? 'Metadata') as 'None' | 'Metadata' | 'Object'
    const opts: Parameters<TableRenderer>[2] = { includeObject, resourceVersion: String(this.store.resourceVersion) }
    if (cont) opts.continue = cont
    return { status: 200, body: this.#table?.(type, objects, opts), headers: { 'Content-Type': 'application/json;as=Table;v=v1;g=meta.k8s.io' } }
  }

  /** For a watch that asked for Tables: turns each event's object into a one-row Table. */
  tableRendererFor(req: ApiRequest): ((json: string) => string) | undefined {
    const render = this.#table
    const type = this.registry.lookup(req.group, req.version, req.resource)
    if (!render || !type) return undefined
    const includeObject = (req.query.get('includeObject') ?? 'Metadata') as 'None' | 'Metadata' | 'Object'
    return (json) => JSON.stringify(render(type, [JSON.parse(json) as KubeObject], { includeObject, resourceVersion: String(this.store.resourceVersion) }))
  }

  /**
   * `pods/<name>/log`: simulated containers write nothing, so a running container's log is empty;
   * the container must be named when there are several, and must have started.
   */
  #podLog(type: ResourceType, req: ApiRequest): Reply {
    const pod = this.#mustLive(type, req).obj
    const name = pod.metadata.name ?? ''
    const spec = isObject(pod.spec) ? pod.spec : {}
    const names = (Array.isArray(spec.containers) ? spec.containers : []).map((c) => (isObject(c) ? String(c.name ?? '') : ''))
    const container = req.query.get('container') ?? (names.length === 1 ? names[0] : undefined)
    if (container === undefined) throw badRequest(`a container name must be specified for pod ${name}, choose one of: [${names.join(' ')}]`)
    if (!names.includes(container)) throw badRequest(`container ${container} is not valid for pod ${name}`)
    const status = isObject(pod.status) ? pod.status : {}
    const statuses = Array.isArray(status.containerStatuses) ? status.containerStatuses : []
    const cs = statuses.find((x) => isObject(x) && x.name === container) as { state?: Record<string, unknown> } | undefined
    if (!cs?.state || isObject(cs.state.waiting) || !(isObject(cs.state.running) || isObject(cs.state.terminated))) {
      const reason = isObject(cs?.state?.waiting) && typeof cs.state.waiting.reason === 'string' ? cs.state.waiting.reason : 'ContainerCreating'
      throw badRequest(`container "${container}" in pod "${name}" is waiting to start: ${reason}`)
    }
    return { status: 200, text: '', headers: { 'Content-Type': 'text/plain' } }
  }

  #get(type: ResourceType, req: ApiRequest): Reply {
    const live = this.#mustLive(type, req)
    if (this.#wantsTable(req)) return this.#tableReply(type, req, [live.obj])
    return this.#objectReply(type, 200, live)
  }

  #filterOf(type: ResourceType, req: ApiRequest): WatchFilter {
    const fields = parseFieldSelector(req.query.get('fieldSelector'))
    return { namespace: type.namespaced ? req.namespace : undefined, labels: parseLabelSelector(req.query.get('labelSelector')), fields }
  }

  #list(type: ResourceType, req: ApiRequest): Reply {
    validateListOptions(req.query, false)
    const filter = this.#filterOf(type, req)
    let items = this.store.list(tableOf(type), filter.namespace)
    if (!filter.labels.empty || !filter.fields.empty) items = items.filter((o) => storedMatches(filter, o))
    const rv = String(this.store.resourceVersion)
    const page = pageOf(items, req.query, rv)
    items = page.items
    const next = page.continue
    if (this.#wantsTable(req)) return this.#tableReply(type, req, items.map((o) => o.obj), next)
    const gv = groupVersion(type.group, type.version)
    let meta = `{"resourceVersion":${JSON.stringify(rv)}`
    if (next) meta += `,"continue":${JSON.stringify(next)},"remainingItemCount":${page.remainingItemCount ?? 0}`
    meta += '}'
    const parts = type.custom ? items.map((o) => this.#jsonFor(type, o)) : items.map((o) => o.itemJson)
    return { status: 200, json: `{"kind":${JSON.stringify(type.listKind)},"apiVersion":${JSON.stringify(gv)},"metadata":${meta},"items":[${parts.join(',')}]}` }
  }

  // ---------------------------------------------------------------- body helpers

  #bodyObject(req: ApiRequest): KubeObject {
    const body = req.body
    if (!isObject(body)) throw badRequest('the body of the request is not a JSON object')
    const obj = body as KubeObject
    if (!isObject(obj.metadata)) obj.metadata = {}
    return obj
  }

  /** Puts apiVersion and kind first and checks that they match the endpoint. */
  #stamp(type: ResourceType, obj: KubeObject): KubeObject {
    const gv = groupVersion(type.group, type.version)
    if (obj.apiVersion !== undefined && obj.apiVersion !== '' && obj.apiVersion !== gv)
      throw badRequest(`the API version in the data (${String(obj.apiVersion)}) does not match the expected API version (${gv})`)
    if (obj.kind !== undefined && obj.kind !== '' && obj.kind !== type.kind) throw badRequest(`the kind in the data (${String(obj.kind)}) does not match the expected kind (${type.kind})`)
    const { apiVersion: _a, kind: _k, metadata, ...rest } = obj
    dropEmptyMetadata(metadata)
    return { apiVersion: gv, kind: type.kind, metadata, ...rest }
  }

  #checkNamespace(type: ResourceType, obj: KubeObject, req: ApiRequest): string {
    if (!type.namespaced) {
      delete obj.metadata.namespace
      return ''
    }
    const ns = req.namespace
    if (!ns) throw methodNotAllowed()
    if (obj.metadata.namespace && obj.metadata.namespace !== ns) throw badRequest('the namespace of the provided object does not match the namespace sent on the request')
    obj.metadata.namespace = ns
    return ns
  }

  #now(): string {
    return rfc3339()
  }

  // ---------------------------------------------------------------- admission (defaulting, kind rules, validation)

  /** Kind-specific server behaviour plus defaulting, shared by every write. */
  #default(type: ResourceType, obj: KubeObject, old: KubeObject | undefined): void {
    if (!type.custom && type.group === '') {
      if (type.kind === 'Secret' && isObject(obj.stringData)) {
        const data = isObject(obj.data) ? { ...obj.data } : {}
        for (const [k, v] of Object.entries(obj.stringData)) data[k] = Buffer.from(String(v)).toString('base64')
        obj.data = data
        delete obj.stringData
      }
      if (type.kind === 'Namespace') {
        const name = obj.metadata.name ?? ''
        obj.metadata.labels = { ...obj.metadata.labels, 'kubernetes.io/metadata.name': name }
        if (!isObject(obj.spec)) obj.spec = {}
        const spec = obj.spec as Record<string, unknown>
        if (!Array.isArray(spec.finalizers)) spec.finalizers = ['kubernetes']
      }
    }
    type.default?.(obj)
    if (!type.custom && type.group === '' && type.kind === 'Service') {
      const refused = prepareService(obj, old, () => this.#freeServiceIP())
      if (refused.length > 0) throw invalidObject(type, obj.metadata.name ?? '', refused)
    }
  }

  /** A free Service address; reserved only when the Service is stored, so a dry run takes none. */
  #freeServiceIP(): string {
    let n = this.#nextServiceIP
    let ip: string
    do {
      ip = `10.96.${(n >> 8) & 255}.${n & 255}`
      n++
    } while (this.#serviceIPs.has(ip) || ip.endsWith('.0') || ip.endsWith('.255'))
    return ip
  }

  /** Keeps the set of allocated Service IPs in step with what is stored. */
  #trackServiceIP(type: ResourceType, obj: KubeObject, stored: boolean): void {
    if (type.custom || type.group !== '' || type.kind !== 'Service') return
    const ip = isObject(obj.spec) ? obj.spec.clusterIP : undefined
    if (typeof ip !== 'string' || ip === 'None' || ip === '') return
    if (stored) this.#serviceIPs.add(ip)
    else this.#serviceIPs.delete(ip)
  }

  /**
   * Decoding into the kind's Go type, which fails on a value of the wrong JSON type or a quantity
   * that does not parse before anything else (defaulting included) looks at the object. A body
   * decoded from protobuf into a built-in kind's type (the sandbox's controllers') was made by
   * that type: nothing in it can fail.
   */
  #decodes(type: ResourceType, req: ApiRequest, obj: KubeObject): void {
    if (req.typed === true && !type.custom) return
    const undecodable = type.decodeError?.(decodedPart(type, req, obj))
    if (undecodable) throw decodingError(type, req, obj, undecodable)
  }

  /** Pruning (CRs) and validation; throws 422 / 400 as the server does, returns warnings. */
  #admit(type: ResourceType, obj: KubeObject, req: ApiRequest, old: KubeObject | undefined): string[] {
    const warnings: string[] = []
    const decoded = decodedPart(type, req, obj)
    const typedBuiltin = req.typed === true && !type.custom
    // A create or an update decoded its body before defaulting (#decodes); an apply's merged
    // object is decoded here: its configuration's types were checked, but a quantity is any scalar to it.
    if (patchTypeOf(req.contentType) === 'apply' && req.verb === 'patch') this.#decodes(type, req, obj)
    // An apply's configuration was checked for undeclared fields before it was merged (a 500
    // otherwise), and the live object holds none: the merged object has nothing to prune. Nor has
    // a body decoded from protobuf into a built-in kind's type (the sandbox's controllers').
    if (type.prune && patchTypeOf(req.contentType) !== 'apply' && !typedBuiltin) {
      const mode = req.query.get('fieldValidation') ?? 'Warn'
      if (mode === 'Strict') {
        const pruned = type.undeclared ? type.undeclared(decoded) : type.prune(structuredClone(decoded))
        if (pruned.length > 0) throw strictDecodingError(type, req, obj, pruned)
      } else {
        const pruned = type.prune(decoded)
        if (mode !== 'Ignore') for (const p of pruned) warnings.push(`unknown field "${p}"`)
      }
    }
    // OwnerReferencesPermissionEnforcement is a mutating plugin: it runs before validation. Only
    // requests with a user pass through it (the sandbox's own controllers act as the server).
    if (req.user && this.authorize) admitOwnerReferences(type, obj, old, req.user, req.subresource, this.authorize, (g, v, k) => this.registry.byKind(g, v, k))
    // OpenShift's SCC admission is a mutating plugin too, for every Pod (the controllers' included).
    if (this.openshift && !type.custom && req.subresource === undefined) admitRestrictedV2(type, obj, old, this.#namespace(obj.metadata.namespace ?? '')?.metadata.annotations)
    if (req.user && req.subresource === undefined) for (const hook of this.mutatingWebhooks) hook(obj, { group: type.group, resource: type.resource, operation: old ? 'UPDATE' : 'CREATE' })
    const causes = type.custom ? validateMetadata(obj) : validateBuiltin(obj, old)
    causes.push(...(type.validate?.(obj, old) ?? []))
    if (causes.length > 0) throw invalidObject(type, obj.metadata.name ?? '', causes)
    // A patch that creates (an apply to a missing object) needs `create` as well as `patch`: its
    // create validation is wrapped in an authorization check (apiserver endpoints/handlers/patch.go,
    // `withAuthorization(…, createAuthorizerAttributes)`), asked before the validating plugins.
    if (!old && req.verb === 'patch' && req.user && this.authorize) {
      const name = obj.metadata.name ?? ''
      const d = this.authorize({ user: req.user, verb: 'create', resourceRequest: true, group: type.group, version: type.version, resource: type.resource, ...(req.namespace ? { namespace: req.namespace } : {}), name })
      if (!d.allowed) throw forbidden(type.group, type.resource, name, d.reason)
    }
    // Validating admission plugins, in kube-apiserver's order: PodSecurity, then ResourceQuota.
    if (!type.custom && req.subresource === undefined) {
      warnings.push(...admitPodSecurity(type, obj, old, type.namespaced ? this.#namespace(obj.metadata.namespace ?? '')?.metadata.labels : undefined))
      if (!old && type.namespaced) admitQuota(this.#quotaStore, type, obj)
    }
    return warnings
  }

  #terminating(namespace: string): boolean {
    if (this.#emptying.has(namespace)) return true
    const status = this.#namespace(namespace)?.status
    return isObject(status) && status.phase === 'Terminating'
  }

  #namespace(name: string): KubeObject | undefined {
    return this.store.get('/namespaces', '', name)?.obj
  }

  /** What quota admission and the quota controller read: a namespace's quotas and objects. */
  #quotaStore: QuotaStore = {
    quotas: (ns) => this.store.list('/resourcequotas', ns).map((o) => o.obj),
    objects: (ns) => {
      const out: { type: ResourceType; obj: KubeObject }[] = []
      for (const t of this.registry.all()) {
        if (!t.namespaced || t.version !== this.#storageVersionOf(t)) continue
        for (const o of this.store.list(tableOf(t), ns)) out.push({ type: t, obj: o.obj })
      }
      return out
    },
  }

  #syncingQuotas = false

  /**
   * The resource quota controller, run synchronously after every write in a namespace that has
   * quotas: each quota's `status.hard` and `status.used` are recomputed and written through
   * `/status` when they changed.
   */
  #syncQuotas(namespace: string): void {
    if (this.#syncingQuotas || namespace === '' || this.#terminating(namespace)) return
    const quotas = this.store.list('/resourcequotas', namespace)
    if (quotas.length === 0) return
    this.#syncingQuotas = true
    try {
      for (const q of quotas) {
        const status = quotaStatus(this.#quotaStore, q.obj)
        if (deepEqual(status, q.obj.status)) continue
        this.respond({
          verb: 'update', group: '', version: 'v1', resource: 'resourcequotas', subresource: 'status', namespace, name: q.name,
          body: { ...q.copy(), status }, query: new URLSearchParams(), userAgent: 'kube-controller-manager/v1.34.0 (linux/amd64) kubernetes/sandbox/resourcequota-controller',
        })
      }
    } finally {
      this.#syncingQuotas = false
    }
  }

  /** Fields a new object gets from the server (identity, timestamps, initial status). */
  #initialise(type: ResourceType, obj: KubeObject): void {
    const m = obj.metadata
    delete m.resourceVersion
    delete m.deletionTimestamp
    delete m.deletionGracePeriodSeconds
    delete (m as Record<string, unknown>).selfLink
    m.uid = randomUUID()
    m.creationTimestamp = this.#now()
    if (type.generation === 'none') delete m.generation
    else m.generation = 1
    if (type.subresources.status) {
      if (type.custom) delete obj.status
      else obj.status = initialStatus(type, obj)
    }
  }

  #checkName(type: ResourceType, obj: KubeObject): string {
    const m = obj.metadata
    if (!m.name) {
      if (m.generateName) {
        // Random suffix from the same alphabet as kube's rand.String; retried on collision.
        const prefix = m.generateName.length > 58 ? m.generateName.slice(0, 58) : m.generateName
        for (let attempt = 0; attempt < 10; attempt++) {
          let suffix = ''
          for (let i = 0; i < 5; i++) suffix += generateAlphabet[Math.floor(Math.random() * generateAlphabet.length)]
          const name = prefix + suffix
          if (!this.#live(type, m.namespace, name)) {
            m.name = name
            break
          }
        }
      } else {
        throw invalidObject(type, '', [{ reason: 'FieldValueRequired', field: 'metadata.name', message: 'Required value: name or generateName is required' }])
      }
    }
    const name = m.name ?? ''
    const problems = nameProblems(type, name)
    if (problems.length > 0) throw invalidObject(type, name, problems.map((p) => invalidCause('metadata.name', JSON.stringify(name), p)))
    return name
  }

  // ---------------------------------------------------------------- create

  #create(type: ResourceType, req: ApiRequest): Reply {
    const obj = this.#stamp(type, this.#bodyObject(req))
    this.#decodes(type, req, obj)
    const ns = this.#checkNamespace(type, obj, req)
    admitNamespaceLifecycle(type, obj, ns, this.#namespace(ns))
    const name = this.#checkName(type, obj)
    if (this.#live(type, ns, name)) throw alreadyExists(type.group, type.resource, name)
    this.#initialise(type, obj)
    this.#default(type, obj, undefined)
    const warnings = this.#admit(type, obj, req, undefined)
    const managed = this.#engine.track(undefined, obj, { manager: managerOf(req), topology: type.topology, apiVersion: obj.apiVersion, resetFields: resetFieldsOf(type, undefined) })
    if (isDryRun(req)) return { status: 201, body: managed, headers: headerMap(undefined, warnings) ?? {} }
    const stored = this.#commitNew(type, managed)
    return this.#objectReply(type, 201, stored, headerMap(undefined, warnings))
  }

  #commitNew(type: ResourceType, obj: KubeObject): StoredObject {
    const stored = this.store.put(tableOf(type), obj)
    this.#trackServiceIP(type, obj, true)
    if (isCRD(type)) return this.#crdChanged(stored)
    this.#syncQuotas(stored.namespace)
    return stored
  }

  // ---------------------------------------------------------------- update

  #update(type: ResourceType, req: ApiRequest): Reply {
    const live = this.#mustLive(type, req)
    const next = this.#stamp(type, this.#bodyObject(req))
    return this.#writeUpdate(type, req, live, next, { patch: false, subresource: req.subresource })
  }

  /**
   * The update pipeline shared by PUT, non-apply patches and scale: preconditions, identity,
   * subresource rules, finalizers, defaulting, validation, generation, managedFields, no-op skip.
   */
  #writeUpdate(type: ResourceType, req: ApiRequest, live: StoredObject, next: KubeObject, o: { patch: boolean; subresource: string | undefined }): Reply {
    if (o.subresource !== 'scale') this.#decodes(type, req, next)
    const old = live.obj
    const name = live.name
    const m = next.metadata
    // managedFields sent with a write replace the stored ones (`[{}]` clears them): a change even
    // when nothing else changes.
    const sentManagedFields = m.managedFields !== undefined
    if (m.name !== undefined && m.name !== name) throw badRequest(`the name of the object (${m.name}) does not match the name on the URL (${name})`)
    if (type.namespaced && m.namespace !== undefined && m.namespace !== live.namespace) throw badRequest('the namespace of the provided object does not match the namespace sent on the request')
    // A PUT's uid is a precondition, as the registry's update makes it; a patch's is validated (uidChange).
    if (o.patch && o.subresource !== 'status') {
      const changed = uidChange(m.uid, old.metadata.uid)
      if (changed.length > 0) throw invalidObject(type, name, changed)
    } else if (m.uid !== undefined && m.uid !== '' && m.uid !== old.metadata.uid)
      throw conflict(type.group, type.resource, name, `Precondition failed: UID in precondition: ${m.uid}, UID in object meta: ${old.metadata.uid ?? ''}`)
    const rv = m.resourceVersion
    if (rv !== undefined && rv !== '' && rv !== old.metadata.resourceVersion) throw conflict(type.group, type.resource, name)
    if ((rv === undefined || rv === '') && type.custom && !o.patch)
      throw invalidObject(type, name, [{ reason: 'FieldValueInvalid', field: 'metadata.resourceVersion', message: 'Invalid value: 0: must be specified for an update' }])
    let obj: KubeObject
    if (o.subresource === 'resize') {
      // pod-resize.ts: only the containers' resources and resizePolicy change, within ValidatePodResize.
      obj = resizedPod(next, old)
      const causes = validateResize(obj, old)
      if (causes.length > 0) throw invalidObject(type, name, causes)
      if (m.managedFields !== undefined) obj.metadata.managedFields = m.managedFields
    } else if (o.subresource === 'status') {
      // /status takes only status from the request. A custom resource's stored object may hold
      // fields its CRD's schema has since dropped, which pruning removes: it gets a private copy.
      obj = type.custom ? live.copyWithoutStatus() : live.withoutStatus()
      if (next.status !== undefined) obj.status = next.status
      if (m.managedFields !== undefined) obj.metadata.managedFields = m.managedFields
      statusKeepsAnnotations(type, obj, next)
    } else {
      obj = next
      m.name = name
      if (type.namespaced) m.namespace = live.namespace
      else delete m.namespace
      m.uid = old.metadata.uid ?? ''
      m.creationTimestamp = old.metadata.creationTimestamp ?? ''
      if (old.metadata.deletionTimestamp) m.deletionTimestamp = old.metadata.deletionTimestamp
      else delete m.deletionTimestamp
      if (old.metadata.deletionGracePeriodSeconds !== undefined) m.deletionGracePeriodSeconds = old.metadata.deletionGracePeriodSeconds
      else delete m.deletionGracePeriodSeconds
      if (m.managedFields === undefined && old.metadata.managedFields !== undefined) m.managedFields = old.metadata.managedFields
      if (type.subresources.status && o.subresource !== 'scale') {
        if (old.status === undefined) delete obj.status
        else obj.status = old.status
      }
      if (old.metadata.deletionTimestamp) {
        const had = new Set(old.metadata.finalizers ?? [])
        const added = (m.finalizers ?? []).filter((f) => !had.has(f))
        if (added.length > 0)
          throw invalidObject(type, name, [{ reason: 'FieldValueForbidden', field: 'metadata.finalizers', message: 'Forbidden: no new finalizers can be added if the object is being deleted' }])
      }
      this.#default(type, obj, old)
    }
    obj.metadata.resourceVersion = old.metadata.resourceVersion ?? ''
    const warnings = this.#admit(type, obj, req, old)
    setGeneration(type, old, obj, o.subresource)
    if (sameObject(obj, old, sentManagedFields)) return this.#objectReply(type, 200, live)
    const subresource = o.subresource === 'status' || o.subresource === 'scale' ? o.subresource : undefined
    const call: Parameters<WriteEngine['track']>[2] = { manager: managerOf(req), topology: type.topology, apiVersion: groupVersion(type.group, type.version), resetFields: resetFieldsOf(type, subresource) }
    if (subresource) call.subresource = subresource
    const managed = this.#engine.track(old, obj, call)
    return this.#commitUpdate(type, req, live, managed, warnings)
  }

  /** Stores an updated object, or removes it when it is deleting and has no finalizers left. */
  #commitUpdate(type: ResourceType, req: ApiRequest, live: StoredObject, obj: KubeObject, warnings: string[]): Reply {
    const headers = headerMap(undefined, warnings)
    if (isDryRun(req)) return { status: 200, body: obj, ...(headers ? { headers } : {}) }
    // As the registry's shouldDeleteDuringUpdate: gone once deleting with no grace left and no finalizers.
    if (obj.metadata.deletionTimestamp && (obj.metadata.deletionGracePeriodSeconds ?? 0) === 0 && (obj.metadata.finalizers ?? []).length === 0) {
      // As the registry's errEmptiedFinalizers path: the object is deleted, not updated first;
      // the DELETED event carries its last stored state.
      const removed = this.#removeNow(type, live.namespace, live.name)
      return this.#objectReply(type, 200, removed ?? live, headers)
    }
    this.#trackServiceIP(type, live.obj, false)
    const stored = this.store.put(tableOf(type), obj)
    this.#trackServiceIP(type, obj, true)
    const final = isCRD(type) ? this.#crdChanged(stored) : stored
    this.#syncQuotas(stored.namespace)
    return this.#objectReply(type, 200, final, headers)
  }

  // ---------------------------------------------------------------- patch

  #patch(type: ResourceType, req: ApiRequest): Reply {
    const pt = patchTypeOf(req.contentType)
    if (pt === 'apply') return this.#apply(type, req)
    const accepted = type.custom ? [jsonPatchType, mergePatchType, applyPatchType, applyPatchCbor] : [jsonPatchType, mergePatchType, strategicPatchType, applyPatchType, applyPatchCbor]
    if (pt === undefined || (pt === 'strategic' && type.custom)) throw unsupportedMediaType(accepted)
    const live = this.#mustLive(type, req)
    // A merge patch of a built-in kind's /status builds on the frozen stored object: the patch
    // copies what it changes and shares the rest (mergePatch never mutates its target), and the
    // /status write keeps only the status from the result. Anything else patches a private copy.
    const frozen = pt === 'merge' && req.subresource === 'status' && !type.custom ? live.frozen() : undefined
    const target = frozen === undefined ? live.copy() : ({ ...frozen, metadata: { ...frozen.metadata } } as KubeObject)
    const patched = this.#patchObject(type, target, req, pt)
    const next = this.#stamp(type, patched)
    return this.#writeUpdate(type, req, live, next, { patch: true, subresource: req.subresource })
  }

  #patchObject(type: ResourceType, target: KubeObject, req: ApiRequest, pt: string): KubeObject {
    // Custom resource versions share storage: patch the object as served at this endpoint's version.
    target.apiVersion = groupVersion(type.group, type.version)
    const body = typeof req.body === 'string' ? parseJson(req.body) : req.body
    let out: unknown
    if (pt === 'json') {
      if (!Array.isArray(body)) throw badRequest('json: cannot unmarshal object into Go value of type jsonpatch.Patch')
      try {
        out = jsonpatch.applyPatch(target, body as Operation[], true, true, true).newDocument
      } catch (e) {
        throw new StatusError(422, 'Invalid', 'the server rejected our request due to an error in our request', {
          causes: [{ reason: 'UnexpectedServerResponse', message: e instanceof Error ? e.message.split('\n')[0] ?? '' : String(e) }],
        })
      }
    } else {
      if (!isObject(body)) throw badRequest('the body of the request is not a JSON object')
      out = pt === 'merge' ? mergePatch(target, body) : this.#engine.strategicMergePatch(target, body as JsonObject, type.topology)
    }
    if (!isObject(out)) throw badRequest('the patched object is not a JSON object')
    const obj = out as KubeObject
    if (!isObject(obj.metadata)) obj.metadata = {}
    return obj
  }

  // ---------------------------------------------------------------- server-side apply

  #apply(type: ResourceType, req: ApiRequest): Reply {
    const manager = req.query.get('fieldManager')
    if (!manager) throw invalidOptions('PatchOptions', [{ reason: 'FieldValueRequired', field: 'fieldManager', message: 'Required value: is required for apply patch' }])
    if (manager.length > 128) throw invalidOptions('PatchOptions', [{ reason: 'FieldValueTooLong', field: 'fieldManager', message: `Too long: may not be more than 128 bytes` }])
    const force = req.query.get('force') === 'true'
    const cfg = parseApplyBody(req.body)
    const gv = groupVersion(type.group, type.version)
    if (cfg.apiVersion !== gv) throw badRequest(`Incorrect version specified in apply patch. Specified patch version: ${String(cfg.apiVersion ?? '')}, expected: ${gv}`)
    if (cfg.kind !== type.kind) throw badRequest(`Incorrect kind specified in apply patch. Specified patch kind: ${String(cfg.kind ?? '')}, expected: ${type.kind}`)
    if (!isObject(cfg.metadata)) cfg.metadata = {}
    if (cfg.metadata.managedFields !== undefined && cfg.metadata.managedFields !== null) throw badRequest('metadata.managedFields must be nil')
    delete cfg.metadata.managedFields
    const name = req.name ?? ''
    if (cfg.metadata.name !== undefined && cfg.metadata.name !== name) throw badRequest(`the name of the object (${cfg.metadata.name}) does not match the name on the URL (${name})`)
    cfg.metadata.name = name
    if (type.namespaced) {
      if (cfg.metadata.namespace !== undefined && cfg.metadata.namespace !== req.namespace) throw badRequest('the namespace of the provided object does not match the namespace sent on the request')
      cfg.metadata.namespace = req.namespace ?? ''
    }
    const subresource = req.subresource === 'status' ? 'status' : undefined
    const live = this.#live(type, req.namespace, name)
    // A resourceVersion in the configuration is a precondition, as for every other write.
    const rvPre = cfg.metadata.resourceVersion
    if (live && typeof rvPre === 'string' && rvPre !== '' && rvPre !== live.obj.metadata.resourceVersion) throw conflict(type.group, type.resource, name)
    if (!live) {
      if (subresource) throw notFound(type.group, type.resource, name)
      const ns = type.namespaced ? (req.namespace ?? '') : ''
      admitNamespaceLifecycle(type, cfg, ns, this.#namespace(ns))
      const problems = nameProblems(type, name)
      if (problems.length > 0) throw invalidObject(type, name, problems.map((p) => invalidCause('metadata.name', JSON.stringify(name), p)))
    }
    const call: ApplyCall = { manager, force, topology: type.topology, apiVersion: gv, resetFields: resetFieldsOf(type, subresource), defaulter: (o) => this.#default(type, o, live?.obj) }
    if (subresource) call.subresource = subresource
    // structured-merge-diff names the object as `<namespace>/<name>; <group>/<version>, Kind=<kind>`.
    const typedName = `${type.namespaced ? (req.namespace ?? '') : ''}/${name}; ${type.group}/${type.version}, Kind=${type.kind}`
    if (type.prune) {
      // A field the CRD schema does not declare fails the typed conversion of the patch; the
      // server answers with that raw error (HTTP 500, no reason), whatever fieldValidation says
      // (kubernetes/kubernetes#139253).
      // A built-in kind's configuration is also typed: a value of the wrong type fails the same way.
      const errors = type.applyErrors ? type.applyErrors(cfg) : type.prune(structuredClone(cfg)).slice(0, 1).map((p) => `.${p}: field not declared in schema`)
      if (errors.length > 0) throw new StatusError(500, '', `failed to create typed patch object (${typedName}): ${applyErrorText(errors)}`)
    }
    let result: ReturnType<WriteEngine['apply']>
    try {
      result = this.#engine.apply(live?.copy(), cfg, call)
    } catch (e) {
      if (e instanceof StatusError) throw e
      // The engine's typing errors (duplicate list-map keys, missing key fields) carry path and detail.
      const typed = e as { path?: unknown; detail?: unknown; message?: unknown }
      const what = typeof typed.path === 'string' && typeof typed.detail === 'string' ? `${typed.path}: ${typed.detail}` : String(typed.message ?? e)
      throw new StatusError(500, '', `failed to create typed patch object (${typedName}): ${what}`)
    }
    if (!result.ok) throw applyConflict(result.conflicts, result.message)
    // An apply that creates takes a server-generated uid whatever the configuration says (#initialise;
    // registry/generic/registry/store.go `Update` fills the system fields on its create path); one
    // to an existing object may not change it.
    if (live && !subresource) {
      const changed = uidChange(cfg.metadata.uid, live.obj.metadata.uid)
      if (changed.length > 0) throw invalidObject(type, name, changed)
    }
    const obj = this.#stamp(type, result.object)
    if (!live) {
      this.#initialise(type, obj)
      this.#default(type, obj, undefined)
      const warnings = this.#admit(type, obj, req, undefined)
      if (isDryRun(req)) return { status: 201, body: obj, headers: headerMap(undefined, warnings) ?? {} }
      return this.#objectReply(type, 201, this.#commitNew(type, obj), headerMap(undefined, warnings))
    }
    if (!result.changed) return this.#objectReply(type, 200, live)
    const old = live.obj
    let next: KubeObject
    if (subresource === 'status') {
      next = live.copyWithoutStatus()
      if (obj.status !== undefined) next.status = obj.status
      if (obj.metadata.managedFields) next.metadata.managedFields = obj.metadata.managedFields
      statusKeepsAnnotations(type, next, obj)
    } else {
      next = obj
      const m = next.metadata
      m.uid = old.metadata.uid ?? ''
      m.creationTimestamp = old.metadata.creationTimestamp ?? ''
      if (old.metadata.deletionTimestamp) m.deletionTimestamp = old.metadata.deletionTimestamp
      if (old.metadata.deletionGracePeriodSeconds !== undefined) m.deletionGracePeriodSeconds = old.metadata.deletionGracePeriodSeconds
      if (type.subresources.status) {
        if (old.status === undefined) delete next.status
        else next.status = old.status
      }
      if (old.metadata.deletionTimestamp) {
        const had = new Set(old.metadata.finalizers ?? [])
        if ((m.finalizers ?? []).some((f) => !had.has(f)))
          throw invalidObject(type, name, [{ reason: 'FieldValueForbidden', field: 'metadata.finalizers', message: 'Forbidden: no new finalizers can be added if the object is being deleted' }])
      }
    }
    next.metadata.resourceVersion = old.metadata.resourceVersion ?? ''
    const warnings = this.#admit(type, next, req, old)
    setGeneration(type, old, next, subresource)
    if (sameObject(next, old, true)) return this.#objectReply(type, 200, live)
    return this.#commitUpdate(type, req, live, next, warnings)
  }

  // ---------------------------------------------------------------- scale subresource

  #scaleOf(type: ResourceType, stored: StoredObject): Record<string, unknown> {
    const scale = type.subresources.scale
    const obj = stored.obj
    const specReplicas = scale ? getPath(obj, scale.specReplicasPath) : undefined
    const statusReplicas = scale ? getPath(obj, scale.statusReplicasPath) : undefined
    const status: Record<string, unknown> = { replicas: typeof statusReplicas === 'number' ? statusReplicas : 0 }
    if (scale?.labelSelectorPath) {
      const sel = getPath(obj, scale.labelSelectorPath)
      const text = typeof sel === 'string' ? sel : type.custom ? '' : formatLabelSelector(sel)
      if (text !== '') status.selector = text
    }
    const meta: Record<string, unknown> = { name: obj.metadata.name }
    if (obj.metadata.namespace) meta.namespace = obj.metadata.namespace
    meta.uid = obj.metadata.uid
    meta.resourceVersion = obj.metadata.resourceVersion
    meta.creationTimestamp = obj.metadata.creationTimestamp
    return { kind: 'Scale', apiVersion: 'autoscaling/v1', metadata: meta, spec: { replicas: typeof specReplicas === 'number' ? specReplicas : 0 }, status }
  }

  #getScale(type: ResourceType, req: ApiRequest): Reply {
    return { status: 200, body: this.#scaleOf(type, this.#mustLive(type, req)) }
  }

  #updateScale(type: ResourceType, req: ApiRequest, body: unknown): Reply {
    const live = this.#mustLive(type, req)
    const scale = type.subresources.scale
    if (!isObject(body) || !scale) throw badRequest('the body of the request is not a Scale object')
    const replicas = getPath(body, 'spec.replicas')
    const name = live.name
    if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0) {
      throw invalid('autoscaling', 'Scale', name, [{ reason: 'FieldValueInvalid', field: 'spec.replicas', message: `Invalid value: ${JSON.stringify(replicas ?? null)}: must be greater than or equal to 0` }])
    }
    const rv = getPath(body, 'metadata.resourceVersion')
    if (typeof rv === 'string' && rv !== '' && rv !== live.obj.metadata.resourceVersion) throw conflict(type.group, type.resource, name)
    const next = live.copy()
    setPath(next as unknown as Record<string, unknown>, scale.specReplicasPath, replicas)
    const reply = this.#writeUpdate(type, req, live, next, { patch: true, subresource: 'scale' })
    if (reply.status !== 200) return reply
    const after = this.#live(type, req.namespace, name)
    if (isDryRun(req) || !after) {
      const obj = reply.body as KubeObject
      return { status: 200, body: this.#scaleOf(type, new StoredObject(obj, 0)) }
    }
    return { status: 200, body: this.#scaleOf(type, after) }
  }

  #patchScale(type: ResourceType, req: ApiRequest): Reply {
    const pt = patchTypeOf(req.contentType)
    if (pt === undefined || pt === 'apply') throw unsupportedMediaType([jsonPatchType, mergePatchType, strategicPatchType])
    const live = this.#mustLive(type, req)
    const current = this.#scaleOf(type, live) as unknown as KubeObject
    const body = typeof req.body === 'string' ? parseJson(req.body) : req.body
    let patched: unknown
    if (pt === 'json') {
      if (!Array.isArray(body)) throw badRequest('json: cannot unmarshal object into Go value of type jsonpatch.Patch')
      try {
        patched = jsonpatch.applyPatch(current, body as Operation[], true, true, true).newDocument
      } catch (e) {
        throw new StatusError(422, 'Invalid', 'the server rejected our request due to an error in our request', { causes: [{ reason: 'UnexpectedServerResponse', message: e instanceof Error ? e.message.split('\n')[0] ?? '' : String(e) }] })
      }
    } else patched = mergePatch(current, body)
    return this.#updateScale(type, req, patched)
  }

  // ---------------------------------------------------------------- delete

  #deleteOne(type: ResourceType, req: ApiRequest): Reply {
    const live = this.#mustLive(type, req)
    const opts = isObject(req.body) ? req.body : {}
    const pre = isObject(opts.preconditions) ? opts.preconditions : {}
    if (typeof pre.uid === 'string' && pre.uid !== live.obj.metadata.uid)
      throw conflict(type.group, type.resource, live.name, `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${live.obj.metadata.uid ?? ''}`)
    if (typeof pre.resourceVersion === 'string' && pre.resourceVersion !== live.obj.metadata.resourceVersion)
      throw conflict(type.group, type.resource, live.name, `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${live.obj.metadata.resourceVersion ?? ''}`)
    if (type.group === '' && type.kind === 'Namespace' && (live.name === 'default' || live.name === 'kube-system'))
      throw forbidden('', 'namespaces', live.name, 'this namespace may not be deleted')
    const policy = req.query.get('propagationPolicy') ?? (typeof opts.propagationPolicy === 'string' ? opts.propagationPolicy : undefined) ?? (opts.orphanDependents === true ? 'Orphan' : undefined)
    if (policy !== undefined && policy !== 'Background' && policy !== 'Foreground' && policy !== 'Orphan')
      throw invalidOptions('DeleteOptions', [{ reason: 'FieldValueNotSupported', field: 'propagationPolicy', message: `Unsupported value: "${policy}": supported values: "Foreground", "Background", "Orphan"` }])
    return this.#delete(type, req, live, policy)
  }

  #delete(type: ResourceType, req: ApiRequest, live: StoredObject, policy: string | undefined): Reply {
    const old = live.obj
    let finalizers = [...(old.metadata.finalizers ?? [])]
    if (policy === 'Foreground') finalizers = [...finalizers.filter((f) => f !== 'orphan' && f !== 'foregroundDeletion'), 'foregroundDeletion']
    else if (policy === 'Orphan') finalizers = [...finalizers.filter((f) => f !== 'orphan' && f !== 'foregroundDeletion'), 'orphan']
    else if (policy === 'Background') finalizers = finalizers.filter((f) => f !== 'orphan' && f !== 'foregroundDeletion')
    const dry = isDryRun(req)
    if (type.group === '' && type.kind === 'Namespace' && finalizers.length > 0 && !old.metadata.deletionTimestamp && !dry) return this.#terminateNamespace(live, finalizers)
    const grace = this.#podGracePeriod(type, req, old)
    if (grace > 0) return this.#deletePodGracefully(type, live, finalizers, grace, dry)
    if (finalizers.length === 0 && !old.metadata.deletionTimestamp) {
      if (dry) return this.#deletedReply(type, live)
      const removed = this.#removeNow(type, live.namespace, live.name)
      return this.#deletedReply(type, removed ?? live)
    }
    if (finalizers.length === 0) {
      // Already deleting and the policy dropped the last finalizer.
      if (dry) return this.#deletedReply(type, live)
      const removed = this.#removeNow(type, live.namespace, live.name)
      return this.#deletedReply(type, removed ?? live)
    }
    const next = live.copy()
    const first = !old.metadata.deletionTimestamp
    if (first) {
      next.metadata.deletionTimestamp = this.#now()
      next.metadata.deletionGracePeriodSeconds = 0
      if (type.generation !== 'none') next.metadata.generation = (old.metadata.generation ?? 0) + 1
    }
    next.metadata.finalizers = finalizers
    if (!first && sameObject(next, old, true)) return this.#objectReply(type, 200, live)
    if (dry) return { status: 200, body: next }
    return this.#objectReply(type, 200, this.store.put(tableOf(type), next))
  }

  /**
   * A namespace whose metadata.finalizers keep it: it becomes `Terminating` (creates in it are
   * refused from now on), the namespace controller's work is done at once (its contents deleted,
   * `spec.finalizers` emptied), and it stays until its finalizers are removed.
   */
  #terminateNamespace(live: StoredObject, finalizers: string[]): Reply {
    const next = live.copy()
    next.metadata.deletionTimestamp = this.#now()
    next.metadata.deletionGracePeriodSeconds = 0
    next.metadata.finalizers = finalizers
    next.status = { ...(isObject(next.status) ? next.status : {}), phase: 'Terminating' }
    this.store.put('/namespaces', next)
    this.#deleteContents(live.name)
    const cur = this.#live(this.#namespaceType(), '', live.name) ?? live
    const finalized = cur.copy()
    finalized.spec = { ...(isObject(finalized.spec) ? finalized.spec : {}), finalizers: [] }
    return this.#objectReply(this.#namespaceType(), 200, this.store.put('/namespaces', finalized))
  }

  #namespaceType(): ResourceType {
    const t = this.registry.lookup('', 'v1', 'namespaces')
    if (!t) throw internalError('namespaces are not served')
    return t
  }

  /** The namespace controller's job, done synchronously: every object in the namespace is deleted. */
  #deleteContents(namespace: string): void {
    this.#emptying.add(namespace)
    try {
      for (const t of this.registry.all()) {
        if (!t.namespaced || t.version !== this.#storageVersionOf(t)) continue
        for (const o of [...this.store.list(tableOf(t), namespace)]) this.#delete(t, internalRequest(), o, undefined)
      }
    } finally {
      this.#emptying.delete(namespace)
    }
  }

  /** Namespaces whose contents are being deleted: the quota controller leaves them alone. */
  #emptying = new Set<string>()

  /**
   * The grace period of a pod deletion when graceful termination is simulated (podTerminationMs):
   * a scheduled pod gets `gracePeriodSeconds` (query or DeleteOptions), else its
   * terminationGracePeriodSeconds, else 30; 0 means delete now (unscheduled pods, grace 0, or
   * simulation off).
   */
  #podGracePeriod(type: ResourceType, req: ApiRequest, old: KubeObject): number {
    if (this.#podTerminationMs <= 0 || type.group !== '' || type.resource !== 'pods') return 0
    const spec = isObject(old.spec) ? old.spec : {}
    if (typeof spec.nodeName !== 'string' || spec.nodeName === '') return 0
    const body = isObject(req.body) ? req.body : {}
    const q = req.query.get('gracePeriodSeconds')
    const asked = q !== null ? Number(q) : typeof body.gracePeriodSeconds === 'number' ? body.gracePeriodSeconds : undefined
    if (asked !== undefined && Number.isFinite(asked)) return Math.max(0, asked)
    if (old.metadata.deletionTimestamp) return old.metadata.deletionGracePeriodSeconds ?? 0
    return typeof spec.terminationGracePeriodSeconds === 'number' ? spec.terminationGracePeriodSeconds : 30
  }

  /**
   * A pod being terminated: deletionTimestamp = now + grace, deletionGracePeriodSeconds = grace,
   * and after podTerminationMs the simulated kubelet's final delete (grace 0) removes it, or leaves
   * it to its finalizers.
   */
  #deletePodGracefully(type: ResourceType, live: StoredObject, finalizers: string[], grace: number, dry: boolean): Reply {
    const old = live.obj
    if (old.metadata.deletionTimestamp && deepEqual(old.metadata.finalizers ?? [], finalizers)) return this.#objectReply(type, 200, live)
    const next = live.copy()
    if (!old.metadata.deletionTimestamp) {
      next.metadata.deletionTimestamp = rfc3339(new Date(Date.now() + grace * 1000))
      next.metadata.deletionGracePeriodSeconds = grace
    }
    if (finalizers.length > 0) next.metadata.finalizers = finalizers
    else delete next.metadata.finalizers
    if (dry) return { status: 200, body: next }
    const stored = this.store.put(tableOf(type), next)
    if (!old.metadata.deletionTimestamp) {
      const uid = old.metadata.uid
      const timer = setTimeout(() => {
        const cur = this.#live(type, live.namespace, live.name)
        if (!cur || cur.obj.metadata.uid !== uid || !cur.obj.metadata.deletionTimestamp) return
        if ((cur.obj.metadata.finalizers ?? []).length === 0) this.#removeNow(type, live.namespace, live.name)
        else {
          const last = cur.copy()
          last.metadata.deletionGracePeriodSeconds = 0
          this.store.put(tableOf(type), last)
        }
      }, this.#podTerminationMs)
      timer.unref()
    }
    return this.#objectReply(type, 200, stored)
  }

  #deletedReply(type: ResourceType, removed: StoredObject): Reply {
    // Pods and ServiceAccounts answer with the deleted object; everything else with a Status.
    if (type.group === '' && (type.resource === 'pods' || type.resource === 'serviceaccounts')) return this.#objectReply(type, 200, removed)
    return { status: 200, body: deleteSuccess(type.group, type.resource, removed.name, removed.obj.metadata.uid ?? '') }
  }

  /** Removes an object now, with what the server does around it (namespace contents, CRD types). */
  #removeNow(type: ResourceType, namespace: string, name: string): StoredObject | undefined {
    if (type.group === '' && type.kind === 'Namespace') this.#deleteContents(name)
    if (isCRD(type)) {
      for (const t of this.registry.unregisterCRD(name)) {
        for (const o of [...this.store.list(tableOf(t))]) this.store.remove(tableOf(t), o.namespace, o.name)
      }
    }
    const removed = this.store.remove(tableOf(type), namespace, name)
    if (removed) {
      this.#trackServiceIP(type, removed.obj, false)
      this.#syncQuotas(removed.namespace)
    }
    return removed
  }

  /** The first registered version of a resource: used to visit each table once. */
  #storageVersionOf(t: ResourceType): string {
    return this.registry.all().find((x) => x.group === t.group && x.resource === t.resource)?.version ?? t.version
  }

  #deleteCollection(type: ResourceType, req: ApiRequest): Reply {
    const filter = this.#filterOf(type, req)
    const items = this.store.list(tableOf(type), filter.namespace).filter((o) => storedMatches(filter, o))
    const opts = isObject(req.body) ? req.body : {}
    const policy = req.query.get('propagationPolicy') ?? (typeof opts.propagationPolicy === 'string' ? opts.propagationPolicy : undefined)
    const out: string[] = []
    for (const o of [...items]) {
      const reply = this.#delete(type, req, o, policy)
      const after = this.#live(type, o.namespace, o.name)
      out.push(after ? this.#jsonFor(type, after) : reply.json ?? o.json)
    }
    const gv = groupVersion(type.group, type.version)
    return { status: 200, json: `{"kind":${JSON.stringify(type.listKind)},"apiVersion":${JSON.stringify(gv)},"metadata":{"resourceVersion":"${this.store.resourceVersion}"},"items":[${out.join(',')}]}` }
  }

  // ---------------------------------------------------------------- CRDs

  /** Registers (or re-registers) a CRD's types and writes its status conditions. */
  #crdChanged(stored: StoredObject): StoredObject {
    const adapter = this.#crd
    if (!adapter) return stored
    const crd = stored.obj
    const name = crd.metadata.name ?? ''
    if (crd.metadata.deletionTimestamp) return stored
    let types: ResourceType[] = []
    let conflicts: string[] = []
    try {
      types = adapter.resourceTypes(crd)
    } catch (e) {
      conflicts = [e instanceof Error ? e.message : String(e)]
    }
    const first = types[0]
    if (first) conflicts = this.registry.nameConflicts(name, first.group, first.resource, first.kind)
    if (conflicts.length === 0 && types.length > 0) this.registry.registerCRD(name, types)
    else this.registry.unregisterCRD(name)
    const status = adapter.status(crd, conflicts)
    if (deepEqual(status, crd.status)) return stored
    const next = stored.copy()
    next.status = status
    const crdType = this.registry.lookup('apiextensions.k8s.io', 'v1', 'customresourcedefinitions')
    const tracked = crdType
      ? this.#engine.track(crd, next, { manager: 'kube-apiserver', topology: crdType.topology, apiVersion: 'apiextensions.k8s.io/v1', subresource: 'status', resetFields: resetFieldsOf(crdType, 'status') })
      : next
    return this.store.put('apiextensions.k8s.io/customresourcedefinitions', tracked)
  }

  // ---------------------------------------------------------------- watch

  /**
   * In-process watch with the semantics of the HTTP one. Objects are private copies. `onClose`
   * is called when the server ends the watch (timeout, 410); not after `stop()`.
   */
  watch(req: ApiRequest, onEvent: (event: WatchEvent) => void, onClose?: () => void): () => void {
    return this.#watchObjects(req, onEvent, onClose, false)
  }

  /** In-process watch delivering the stored objects themselves, deeply frozen (see {@link ClusterAccess.watchShared}). */
  watchShared(req: ApiRequest, onEvent: (event: WatchEvent) => void, onClose?: () => void): () => void {
    return this.#watchObjects(req, onEvent, onClose, true)
  }

  #watchObjects(req: ApiRequest, onEvent: (event: WatchEvent) => void, onClose: (() => void) | undefined, shared: boolean): () => void {
    try {
      const sink: WatchSink = { event: (type, json) => onEvent({ type, object: JSON.parse(json) }), close: () => onClose?.() }
      if (shared) sink.object = (type, object) => onEvent({ type, object })
      return this.watchRaw(req, sink)
    } catch (e) {
      const err = e instanceof StatusError ? e : internalError(String(e))
      onEvent({ type: 'ERROR', object: err.status })
      onClose?.()
      return () => {}
    }
  }

  /**
   * Starts a watch, delivering serialised events to `sink`. Throws a {@link StatusError} before
   * any event when the request itself is wrong (unknown resource, bad selector, bad resourceVersion).
   */
  watchRaw(req: ApiRequest, sink: WatchSink, opts: { forceExpire?: boolean } = {}): () => void {
    let type: ResourceType
    let filter: WatchFilter
    try {
      type = this.#typeOf({ ...req, verb: 'watch', name: undefined })
      validateListOptions(req.query, true, this.#watchList)
      filter = this.#filterOf(type, req)
    } catch (e) {
      if (e instanceof SelectorError) throw badRequest(e.message)
      throw e
    }
    if (req.name) {
      const byName = parseFieldSelector(`metadata.name=${escapeFieldValue(req.name)}`)
      const fields = filter.fields
      filter = { ...filter, fields: { empty: false, fields: [...fields.fields, 'metadata.name'], matches: (f) => byName.matches(f) && fields.matches(f) } }
    }
    const table = tableOf(type)
    const rvParam = req.query.get('resourceVersion') ?? ''
    const bookmarks = req.query.get('allowWatchBookmarks') === 'true'
    // sendInitialEvents=false with resourceVersion unset or 0 starts from now, with no initial
    // events (apiserver `pkg/storage/cacher` `Watch`: "SendInitialEvents = false and
    // resourceVersion = 0 means that the request would like to start watching from Any").
    const sendInitialParam = sendInitialEventsOf(req.query)
    const sendInitial = sendInitialParam === true
    let stopped = false
    let unsubscribe: () => void = () => {}
    const timers: NodeJS.Timeout[] = []
    const stop = (): void => {
      stopped = true
      unsubscribe()
      for (const t of timers) clearTimeout(t)
    }
    const end = (): void => {
      if (stopped) return
      stop()
      sink.close()
    }
    const gv = groupVersion(type.group, type.version)
    const send = (type_: WatchEvent['type'], stored: StoredObject): void => {
      if (stopped) return
      if (sink.object && stored.isAt(gv)) sink.object(type_, stored.shared())
      else sink.event(type_, this.#jsonFor(type, stored))
    }
    const bookmark = (annotations?: Record<string, string>): void => {
      if (stopped) return
      const meta: Record<string, unknown> = { resourceVersion: String(this.store.resourceVersion) }
      if (annotations) meta.annotations = annotations
      sink.event('BOOKMARK', JSON.stringify({ kind: type.kind, apiVersion: groupVersion(type.group, type.version), metadata: meta }))
    }
    let gate: BookmarkGate | undefined
    const deliver = (e: StoreEvent): void => {
      gate?.saw(e.rv)
      const now = storedMatches(filter, e.current)
      if (e.type === 'ADDED') {
        if (now) send('ADDED', e.current)
      } else if (e.type === 'DELETED') {
        if (now) send('DELETED', e.current)
      } else {
        const before = e.previous ? storedMatches(filter, e.previous) : now
        if (now && before) send('MODIFIED', e.current)
        else if (now) send('ADDED', e.current)
        else if (before) send('DELETED', e.current)
      }
    }
    let since = 0
    const fromNow = sendInitialParam === false && (rvParam === '' || rvParam === '0')
    const initial = !fromNow && (rvParam === '' || rvParam === '0' || sendInitial)
    if (fromNow) since = this.store.resourceVersion
    else if (!initial) {
      since = Number(rvParam)
      if (!Number.isInteger(since) || since < 0) throw badRequest(`invalid resource version "${rvParam}"`)
    }
    const history = initial || opts.forceExpire ? undefined : this.store.since(table, since)
    if (!initial && !history) {
      const err = expired(since, this.store.compactedResourceVersion + 1)
      sink.event('ERROR', JSON.stringify(err.status))
      // The stream ends right after the ERROR event, as the real server does.
      queueMicrotask(end)
      return stop
    }
    // Subscribe before replaying, and hold live events until the replay is out: a consumer that
    // writes while receiving the replay must still see its own write's event, after the replay.
    gate = new BookmarkGate(initial ? this.store.resourceVersion : since)
    let replaying = true
    const held: StoreEvent[] = []
    unsubscribe = this.store.subscribe(table, (e) => (replaying ? held.push(e) : deliver(e)), { freezes: sink.object !== undefined })
    if (initial) {
      for (const o of this.store.list(table, filter.namespace)) if (storedMatches(filter, o)) send('ADDED', o)
      if (sendInitial && bookmarks) bookmark({ 'k8s.io/initial-events-end': 'true' })
    } else {
      for (const e of history ?? []) deliver(e)
    }
    for (let i = 0; i < held.length; i++) deliver(held[i] as StoreEvent)
    replaying = false
    if (bookmarks) {
      const tick = (): void => {
        if (stopped) return
        if (gate?.due) bookmark()
        const t = setTimeout(tick, this.#bookmarkIntervalMs)
        t.unref()
        timers.push(t)
      }
      const t = setTimeout(tick, this.#bookmarkIntervalMs)
      t.unref()
      timers.push(t)
    }
    const timeout = Number(req.query.get('timeoutSeconds') ?? '0')
    if (timeout > 0) {
      const t = setTimeout(end, timeout * 1000)
      t.unref()
      timers.push(t)
    }
    return stop
  }
}

// ---------------------------------------------------------------- module helpers

/** A reply whose `json` is made when first read (an own enumerable property: a spread copies its value). */
function lazyJsonReply(status: number, make: () => string, headers?: Record<string, string>): Reply {
  let json: string | undefined
  const r: Reply = { status }
  Object.defineProperty(r, 'json', { enumerable: true, configurable: true, get: () => (json ??= make()) })
  if (headers) r.headers = headers
  return r
}

/** The same reply with other headers, its `json` still made only when read. */
function withHeaders(reply: Reply, headers: Record<string, string>): Reply {
  const r = Object.defineProperties({} as Reply, Object.getOwnPropertyDescriptors(reply))
  r.headers = headers
  return r
}

function errorReply(e: StatusError): Reply {
  const r: Reply = { status: e.code, body: e.status }
  if (Object.keys(e.headers).length > 0) r.headers = e.headers
  return r
}

function isDryRun(req: ApiRequest): boolean {
  return req.query.getAll('dryRun').includes('All')
}

function isCRD(type: ResourceType): boolean {
  return type.group === 'apiextensions.k8s.io' && type.resource === 'customresourcedefinitions'
}

/** The field manager of a non-apply write: `?fieldManager=`, else the User-Agent's prefix before `/`. */
export function managerOf(req: ApiRequest): string {
  const q = req.query.get('fieldManager')
  if (q) return q
  const ua = req.userAgent ?? ''
  const slash = ua.indexOf('/')
  const prefix = slash < 0 ? ua : ua.slice(0, slash)
  return prefix === '' ? 'unknown' : prefix
}

/** Fields the endpoint ignores: `status` on the main resource, everything but status on `/status`. */
function resetFieldsOf(type: ResourceType, subresource: string | undefined): string[][] {
  if (!type.subresources.status) return []
  if (subresource === 'status') return type.custom ? [['spec'], ['metadata']] : [['spec']]
  return [['status']]
}

function initialStatus(type: ResourceType, obj: KubeObject): Json {
  switch (type.kind) {
    case 'Pod':
      return { phase: 'Pending', qosClass: qosClass(obj) }
    case 'Service':
      return { loadBalancer: {} }
    case 'Namespace':
      return { phase: 'Active' }
    case 'ReplicaSet':
      return { replicas: 0 }
    case 'StatefulSet':
      return { replicas: 0, availableReplicas: 0 }
    case 'HorizontalPodAutoscaler':
      return { desiredReplicas: 0 }
    case 'PodDisruptionBudget':
      return { disruptionsAllowed: 0, currentHealthy: 0, desiredHealthy: 0, expectedPods: 0 }
    default:
      return {}
  }
}

/** Generation rules of the reference (§2). */
/**
 * A Deployment's `/status` write keeps the annotations it sends: the deployment status strategy
 * (pkg/registry/apps/deployment/strategy.go, deploymentStatusStrategy.PrepareForUpdate) resets
 * only spec and labels, which is how the deployment controller writes
 * `deployment.kubernetes.io/revision` (sync.go getNewReplicaSet, UpdateStatus).
 */
function statusKeepsAnnotations(type: ResourceType, target: KubeObject, sent: KubeObject): void {
  if (type.custom || type.group !== 'apps' || type.resource !== 'deployments') return
  const a = sent.metadata.annotations
  if (a !== undefined && a !== null && typeof a === 'object' && Object.keys(a).length > 0) target.metadata.annotations = { ...a }
  else delete target.metadata.annotations
}

function setGeneration(type: ResourceType, old: KubeObject, next: KubeObject, subresource: string | undefined): void {
  if (type.generation === 'none') {
    delete next.metadata.generation
    return
  }
  let g = old.metadata.generation ?? 1
  if (subresource !== 'status') {
    let changed: boolean
    if (type.generation === 'spec') {
      changed = !deepEqual(old.spec, next.spec)
      if (!changed && type.kind === 'Deployment' && type.group === 'apps') changed = !deepEqual(old.metadata.annotations ?? {}, next.metadata.annotations ?? {})
    } else {
      const { metadata: _a, ...ra } = old
      const { metadata: _b, ...rb } = next
      changed = !deepEqual(ra, rb)
    }
    if (changed) g++
  }
  next.metadata.generation = g
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch (e) {
    throw badRequest(`error decoding patch: ${e instanceof Error ? e.message : String(e)}`)
  }
}

/** The apply body: YAML (or JSON, which is YAML) text, or an already parsed object. */
function parseApplyBody(body: unknown): KubeObject {
  let value: unknown = body
  if (typeof body === 'string') {
    // Most clients (client-node, controllers) send JSON, which is YAML; JSON.parse is far cheaper.
    const first = body.trimStart()[0]
    if (first === '{') {
      try {
        return JSON.parse(body) as KubeObject
      } catch {
        // Not JSON after all: flow-style YAML; the YAML parser below decides.
      }
    }
    try {
      value = parseYaml(body, { version: '1.1', uniqueKeys: true })
    } catch (e) {
      throw badRequest(`error decoding YAML: ${e instanceof Error ? e.message : String(e)}`)
    }
  } else if (body instanceof Uint8Array) {
    throw unsupportedMediaType([applyPatchType])
  }
  if (!isObject(value)) throw badRequest('error decoding YAML: the apply patch is not an object')
  return structuredCloneJson(value) as KubeObject
}

function structuredCloneJson(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v))
}

function applyConflict(conflicts: ApplyConflict[], message: string): StatusError {
  const causes = conflicts.map((c) => ({ reason: 'FieldManagerConflict', message: `conflict with "${c.manager}" using ${c.apiVersion}`, field: c.field }))
  return new StatusError(409, 'Conflict', message, { causes })
}

function internalRequest(): ApiRequest {
  return { verb: 'delete', group: '', version: 'v1', resource: '', query: new URLSearchParams(), userAgent: 'kube-controller-manager' }
}

/**
 * What of a write decoding judges: a /status write of a built-in kind takes all but the status
 * and metadata from the stored object, which was checked when written against the kind's fixed
 * schema; only those two can hold a bad value or an unknown field, and they come last in
 * document order.
 */
function decodedPart(type: ResourceType, req: ApiRequest, obj: KubeObject): KubeObject {
  return !type.custom && req.subresource === 'status' ? ({ apiVersion: obj.apiVersion, kind: obj.kind, metadata: obj.metadata, status: obj.status } as KubeObject) : obj
}

/**
 * `fieldValidation=Strict` refusing unknown fields, as each handler words it: a create or an
 * update fails to decode (handlers/create.go, update.go `transformDecodeError`: 400 `<Kind> in
 * version "<v>" cannot be handled as a <Kind>: strict decoding error: …`); a patch fails after
 * applying (handlers/patch.go: 422 `errors.NewInvalid(schema.GroupKind{}, "", …)` on the field
 * `patch`, whose value is the patched object's JSON for JSON and merge patches, and Go's `%+v` of
 * the patch for a strategic merge patch).
 */
function strictDecodingError(type: ResourceType, req: ApiRequest, obj: KubeObject, pruned: string[]): StatusError {
  return decodingError(type, req, obj, `strict decoding error: ${pruned.map((p) => `unknown field "${p}"`).join(', ')}`)
}

/**
 * An object that does not decode into its kind's Go type, worded by the handler that decoded it
 * (create.go / update.go `transformDecodeError`, patch.go `errors.NewInvalid` on `patch`); an
 * apply meets it converting the merged object (fieldmanager structuredmerge.go: `failed to convert
 * new object (…) to proper version: …`, a plain error, so 500).
 */
function decodingError(type: ResourceType, req: ApiRequest, obj: KubeObject, detail: string): StatusError {
  if (patchTypeOf(req.contentType) === 'apply' && req.verb === 'patch') {
    const name = obj.metadata.name ?? ''
    return new StatusError(500, '', `failed to convert new object (${type.namespaced ? (req.namespace ?? '') : ''}/${name}; ${type.group}/${type.version}, Kind=${type.kind}) to proper version: ${detail}`)
  }
  if (req.verb !== 'patch') return badRequest(`${type.kind} in version "${type.version}" cannot be handled as a ${type.kind}: ${detail}`)
  const strategic = (req.contentType ?? '').split(';')[0]?.trim() === 'application/strategic-merge-patch+json'
  const message = `Invalid value: ${goValue(strategic ? goPrint(req.body) : goJson(obj))}: ${detail}`
  return new StatusError(422, 'Invalid', ` "" is invalid: patch: ${message}`, { causes: [{ reason: 'FieldValueInvalid', message, field: 'patch' }] })
}

/** Go's `%+v` of a decoded JSON value (`map[a:1 b:[x y]]`, keys sorted, nil as `<nil>`). */
function goPrint(v: unknown): string {
  if (v === null || v === undefined) return '<nil>'
  if (Array.isArray(v)) return `[${v.map(goPrint).join(' ')}]`
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>
    return `map[${Object.keys(o).sort().map((k) => `${k}:${goPrint(o[k])}`).join(' ')}]`
  }
  return String(v)
}
