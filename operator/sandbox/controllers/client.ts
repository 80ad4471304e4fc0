/**
 * The controllers' view of the API: typed requests over {@link ClusterAccess} that fail with the
 * server's status, sent under a component's user agent (its field manager is the agent's prefix,
 * as for a real kube-controller-manager that sends no fieldManager).
 */
import type { ApiRequest, ApiResponse, ClusterAccess, KubeObject, WatchEvent } from '../types.ts'

/** A resource's group/version/plural. */
export interface GVR {
  group: string
  version: string
  resource: string
}

/** core/v1 pods */
export const pods: GVR = { group: '', version: 'v1', resource: 'pods' }
/** apps/v1 replicasets */
export const replicaSets: GVR = { group: 'apps', version: 'v1', resource: 'replicasets' }
/** apps/v1 deployments */
export const deployments: GVR = { group: 'apps', version: 'v1', resource: 'deployments' }
/** apps/v1 statefulsets */
export const statefulSets: GVR = { group: 'apps', version: 'v1', resource: 'statefulsets' }
/** core/v1 events. */
export const events: GVR = { group: '', version: 'v1', resource: 'events' }

/**
 * The body of a controller's PUT to `/status`: the object's identity, the resourceVersion it was
 * read at (a stale one conflicts) and the new status. A `/status` update takes nothing else from
 * the body (the server copies the rest from the stored object; a Deployment's annotations aside,
 * passed as `annotations`), so in-process controllers do not copy the whole object into it.
 */
export function statusUpdate(o: KubeObject, status: unknown, annotations?: Record<string, string>): KubeObject {
  const m = o.metadata
  const metadata: KubeObject['metadata'] = { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion }
  if (annotations !== undefined) metadata.annotations = annotations
  return { apiVersion: o.apiVersion, kind: o.kind, metadata, status } as KubeObject
}

/** A failed request, with the HTTP status and the Status `reason` the server gave. */
export class ApiError extends Error {
  readonly status: number
  readonly reason: string
  /** The `reason`s of the Status's details.causes (`NamespaceTerminating`, …). */
  readonly causes: string[]
  constructor(status: number, reason: string, message: string, causes: string[] = []) {
    super(message)
    this.status = status
    this.reason = reason
    this.causes = causes
  }
}

/** Whether an error is a 404 (the object is already gone). */
export function isNotFound(err: unknown): boolean {
  return err instanceof ApiError && err.status === 404
}

/** Whether an error is a 409 (conflict or already exists). */
export function isConflict(err: unknown): boolean {
  return err instanceof ApiError && err.status === 409
}

/** `kube-controller-manager/v1.34.0 (linux/amd64) kubernetes/<commit>/<controller>` */
export function controllerAgent(controller: string): string {
  return `kube-controller-manager/v1.34.0 (linux/amd64) kubernetes/sandbox/${controller}`
}

type Options = { subresource?: string; query?: Record<string, string> }

/** A write's answer: the object the server sent back, decoded only when read (most writers never look). */
export class Written {
  readonly #res: ApiResponse
  constructor(res: ApiResponse) {
    this.#res = res
  }
  /** The object as stored (the caller's own copy). */
  get object(): KubeObject {
    return this.#res.body as KubeObject
  }
}

/** Requests for one component. */
export class Client {
  readonly access: ClusterAccess
  readonly userAgent: string
  readonly #account: boolean

  /** @param account count this component's requests in the sandbox's accounting, as a real apiserver would */
  constructor(access: ClusterAccess, userAgent: string, account = true) {
    this.access = access
    this.userAgent = userAgent
    this.#account = account
  }

  #req(verb: ApiRequest['verb'], gvr: GVR, namespace: string | undefined, name: string | undefined, opts: Options & { body?: unknown; contentType?: string } = {}): ApiRequest {
    // The components this stands for send protobuf: their bodies are decoded into the Go types.
    const req: ApiRequest = { verb, group: gvr.group, version: gvr.version, resource: gvr.resource, query: new URLSearchParams(opts.query ?? {}), userAgent: this.userAgent, typed: true }
    if (this.#account) req.account = true
    if (namespace) req.namespace = namespace
    if (name) req.name = name
    if (opts.subresource) req.subresource = opts.subresource
    if (opts.body !== undefined) req.body = opts.body
    if (opts.contentType) req.contentType = opts.contentType
    return req
  }

  async #send(req: ApiRequest): Promise<ApiResponse> {
    const res = await this.access.handle(req)
    if (res.status >= 400) {
      const body = (typeof res.body === 'object' && res.body !== null ? res.body : {}) as { reason?: string; message?: string; details?: { causes?: { reason?: string }[] } }
      throw new ApiError(res.status, body.reason ?? '', body.message ?? `HTTP ${res.status}`, (body.details?.causes ?? []).map((c) => c.reason ?? ''))
    }
    return res
  }

  /** GET one object (or one of its subresources). */
  async get(gvr: GVR, namespace: string | undefined, name: string, opts: Options = {}): Promise<KubeObject> {
    return (await this.#send(this.#req('get', gvr, namespace, name, opts))).body as KubeObject
  }

  /** LIST (all namespaces when `namespace` is undefined). */
  async list(gvr: GVR, namespace?: string): Promise<{ items: KubeObject[]; resourceVersion: string }> {
    const body = (await this.#send(this.#req('list', gvr, namespace, undefined))).body as { items?: KubeObject[]; metadata?: { resourceVersion?: string } }
    return { items: body.items ?? [], resourceVersion: body.metadata?.resourceVersion ?? '0' }
  }

  /** POST. */
  async create(gvr: GVR, namespace: string | undefined, obj: KubeObject): Promise<Written> {
    return new Written(await this.#send(this.#req('create', gvr, namespace, undefined, { body: obj })))
  }

  /** PUT (the object carries its resourceVersion: a stale one fails with 409). */
  async update(gvr: GVR, obj: KubeObject, opts: Options = {}): Promise<Written> {
    return new Written(await this.#send(this.#req('update', gvr, obj.metadata.namespace, obj.metadata.name, { ...opts, body: obj })))
  }

  /** JSON merge patch. */
  async mergePatch(gvr: GVR, namespace: string | undefined, name: string, patch: unknown, opts: Options = {}): Promise<Written> {
    return new Written(await this.#send(this.#req('patch', gvr, namespace, name, { ...opts, body: patch, contentType: 'application/merge-patch+json' })))
  }

  /** DELETE with DeleteOptions (propagation policy, uid precondition, grace period). */
  async delete(gvr: GVR, namespace: string | undefined, name: string, options: { propagationPolicy?: string; uid?: string; gracePeriodSeconds?: number } = {}): Promise<void> {
    const body: Record<string, unknown> = { kind: 'DeleteOptions', apiVersion: 'v1' }
    const query: Record<string, string> = {}
    if (options.propagationPolicy) {
      body['propagationPolicy'] = options.propagationPolicy
      query['propagationPolicy'] = options.propagationPolicy
    }
    if (options.uid) body['preconditions'] = { uid: options.uid }
    if (options.gracePeriodSeconds !== undefined) {
      body['gracePeriodSeconds'] = options.gracePeriodSeconds
      query['gracePeriodSeconds'] = String(options.gracePeriodSeconds)
    }
    await this.#send(this.#req('delete', gvr, namespace, name, { body, query }))
  }

  /**
   * WATCH from a resourceVersion, with bookmarks; `onClose` when the server ends it. The objects
   * delivered may be frozen and shared (see {@link ClusterAccess.watchShared}): never mutate them.
   */
  watch(gvr: GVR, resourceVersion: string, onEvent: (e: WatchEvent) => void, onClose: () => void): () => void {
    const req = this.#req('watch', gvr, undefined, undefined, { query: { resourceVersion, allowWatchBookmarks: 'true' } })
    // The informers only read what they cache: share the server's frozen objects rather than parse a copy of each.
    return this.access.watchShared ? this.access.watchShared(req, onEvent, onClose) : this.access.watch(req, onEvent, onClose)
  }
}
