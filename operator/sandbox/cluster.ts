/**
 * The request handler core of the sandbox API server: one synchronous pipeline per verb
 * (create, update, patch, apply, delete, get, list, watch) over the {@link Store}, with the
 * semantics of kube-apiserver described in the reference (resourceVersion, generation,
 * status/scale subresources, finalizers, managedFields, defaulting, CRD registration).
 *
 * Writes are synchronous from request to store, so two requests can never interleave between
 * the optimistic-concurrency check and the write — as etcd's compare-and-swap guarantees.
 */
import { Accounting } from './accounting.ts'
import { wireCopy } from '../kube/json.ts'
import { StatusError, badRequest, internalError, invalidOptions, methodNotAllowed } from './errors.ts'
import type { FaultTarget } from './faults.ts'
import { contentTypeOf, convertBody, negotiateOutput, type OutputTarget } from './negotiation.ts'
import { SelectorError } from '../kube/labels.ts'
import { tableOf } from './registry.ts'
import { Store } from './store.ts'
import { EVENT_TABLES, EventTtl } from './event-ttl.ts'
import type { ApiRequest, ApiResponse, ClusterAccess, ResourceType, WatchEvent } from './types.ts'
import { getScale, updateScale, patchScale } from './pipeline/scale.ts'
import { type Reply, type WatchSink, patchTypeOf, headerMap, withHeaders, errorReply, managerOf } from './pipeline/reply.ts'
import { deleteOne, removeNow, deleteCollection } from './pipeline/delete.ts'
import { tableRendererFor, podLog, get, list } from './pipeline/reads.ts'
import { watchObjects, watchRaw } from './pipeline/watch.ts'
import { apply } from './pipeline/apply.ts'
import { create, update, patch } from './pipeline/writes.ts'
import { type ClusterOptions, ServerState } from './pipeline/state.ts'

export type { ApplyConflict, ApplyCall, WriteEngine, CrdAdapter, TableRenderer, MutatingWebhook, ClusterOptions } from './pipeline/state.ts'
export type { Reply, WatchSink } from './pipeline/reply.ts'

const endpointsDeprecated = 'v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice'

/** The in-process API server; implements {@link ClusterAccess}. */
export class Cluster extends ServerState implements ClusterAccess {
  readonly #eventTtl: EventTtl
  constructor(opts: ClusterOptions) {
    super(opts)
    // An expired Event goes as any removal goes (the namespace's quota usage follows).
    const eventTypes = new Map(EVENT_TABLES.map((table) => [table, this.registry.all().find((t) => tableOf(t) === table)]))
    this.#eventTtl = new EventTtl(this.store, opts.eventTtlMs ?? 60 * 60_000, (table, namespace, name) => {
      const type = eventTypes.get(table)
      if (type !== undefined) removeNow(this, type, namespace, name)
    })
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
  override respond(req: ApiRequest): Reply {
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
    const type = this.typeOf(req)
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
        if (req.subresource === 'scale') return getScale(this, type, req)
        if (req.subresource === 'log') return podLog(this, type, req)
        // pods/resize reads the pod (the registry's resize REST returns it whole).
        return get(this, type, req)
      case 'list':
        return list(this, type, req)
      case 'create':
        if (req.name || req.subresource) throw methodNotAllowed()
        return create(this, type, req)
      case 'update':
        if (req.subresource === 'scale') return updateScale(this, type, req, req.body)
        return update(this, type, req)
      case 'patch':
        if (q.has('force') && patchTypeOf(req.contentType) !== 'apply')
          throw invalidOptions('PatchOptions', [{ reason: 'FieldValueForbidden', field: 'force', message: 'Forbidden: may not be specified for non-apply patch' }])
        if (req.subresource === 'scale') return patchScale(this, type, req)
        return patchTypeOf(req.contentType) === 'apply' ? apply(this, type, req) : patch(this, type, req)
      case 'delete':
        if (req.subresource) throw methodNotAllowed()
        return deleteOne(this, type, req)
      case 'deletecollection':
        return deleteCollection(this, type, req)
      case 'watch':
        throw badRequest('watch requests are served by watch()')
    }
  }

  /**
   * In-process watch with the semantics of the HTTP one. Objects are private copies. `onClose`
   * is called when the server ends the watch (timeout, 410); not after `stop()`.
   */
  watch(req: ApiRequest, onEvent: (event: WatchEvent) => void, onClose?: () => void): () => void {
    return watchObjects(this, req, onEvent, onClose, false)
  }

  /** In-process watch delivering the stored objects themselves, deeply frozen (see {@link ClusterAccess.watchShared}). */
  watchShared(req: ApiRequest, onEvent: (event: WatchEvent) => void, onClose?: () => void): () => void {
    return watchObjects(this, req, onEvent, onClose, true)
  }

  /** For a watch that asked for Tables: turns each event's object into a one-row Table. */
  tableRendererFor(req: ApiRequest): ((json: string) => string) | undefined {
    return tableRendererFor(this, req)
  }

  /**
   * Starts a watch, delivering serialised events to `sink`. Throws a {@link StatusError} before
   * any event when the request itself is wrong (unknown resource, bad selector, bad resourceVersion).
   */
  watchRaw(req: ApiRequest, sink: WatchSink, opts: { forceExpire?: boolean } = {}): () => void {
    return watchRaw(this, req, sink, opts)
  }

}
