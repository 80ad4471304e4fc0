/**
 * A thin Kubernetes REST client on plain JSON. `@kubernetes/client-node`'s KubeConfig is used for
 * the connection and credentials only: its typed models drop fields they do not know and turn
 * timestamps into Dates, so every body here goes out as given and comes back as the server sent
 * it. Resource paths come from a fixed table (no discovery round trip per call).
 *
 * This file is the verbs (get, list with its pager, watch, create, replace, apply, patch, delete);
 * the connection, credentials and retries are transport.ts, the watch stream watch-stream.ts, the
 * resource table resources.ts, failed requests api-error.ts, the shapes types.ts.
 */
import { KubeConfig } from '@kubernetes/client-node'
import { ApiError, apiErrorFrom, isExpired } from './api-error.ts'
import { builtinResources, resourceInfo, resourcePath } from './resources.ts'
import { Transport, type RawRequest, type RawResponse } from './transport.ts'
import { watchStream } from './watch-stream.ts'
import { METADATA_LIST_ACCEPT, type ApplyOptions, type ApplyResult, type DeleteOptions, type KubeClientOptions, type KubeList, type KubeObject, type ListOptions, type ListResult, type ObjectLike, type ObjectRef, type PatchOptions, type ResourceInfo, type ResourceRef, type WatchEvent, type WatchOptions, type WriteOptions } from './types.ts'

export * from './types.ts'
export * from './api-error.ts'
export { UnknownKindError, resourceInfo, resourcePath } from './resources.ts'
export type { RawRequest, RawResponse } from './transport.ts'

const patchTypes: Record<PatchOptions['type'], string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
}

/** The proxy choice (HTTPS_PROXY, HTTP_PROXY, NO_PROXY with CIDRs) lives in proxy.ts. */
export { proxyEnvFor } from './proxy.ts'

/**
 * The JSON text of an apply body. The server reads it as YAML (sigs.k8s.io/yaml, go-yaml's scanner),
 * for which U+0085, U+2028 and U+2029 are line breaks: inside a quoted string it would fold them
 * into spaces. JSON.stringify writes them raw, and only inside strings, so they become `\uXXXX`
 * escapes, which both JSON and YAML read back as the character.
 */
export function applyBody(obj: unknown): string {
  return JSON.stringify(obj).replace(/[\u0085\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}


/** The Kubernetes REST client. */
export class KubeClient {
  #transport: Transport
  #opts: KubeClientOptions

  /** @throws Error when the kubeconfig has no current cluster */
  constructor(kc: KubeConfig, opts: KubeClientOptions) {
    this.#transport = new Transport(kc, opts)
    this.#opts = opts
  }

  /** The API server's URL. */
  get server(): string {
    return this.#transport.server
  }

  /** The user agent sent on every request. */
  get userAgent(): string {
    return this.#opts.userAgent
  }

  /** The resource table entry of a kind. @throws UnknownKindError */
  info(ref: ResourceRef): ResourceInfo {
    return resourceInfo(ref, this.#opts.resources)
  }

  /**
   * Adds namespaced kinds to the resource table (a chart's declared kinds): `resource` is the plural
   * in their URLs. A kind already in the table keeps its entry.
   */
  learnKinds(kinds: readonly { apiVersion: string; kind: string; resource: string }[]): void {
    const resources = { ...this.#opts.resources }
    for (const k of kinds) {
      const key = `${k.apiVersion}/${k.kind}`
      if (resources[key] || builtinResources[key]) continue
      const slash = k.apiVersion.indexOf('/')
      resources[key] = { group: slash === -1 ? '' : k.apiVersion.slice(0, slash), version: k.apiVersion.slice(slash + 1), plural: k.resource, namespaced: true }
    }
    this.#opts = { ...this.#opts, resources }
  }

  /**
   * Sends a request and reads the whole answer (any status), through the transport's rate limiter
   * and retries (transport.ts).
   */
  request(req: RawRequest): Promise<RawResponse> {
    return this.#transport.request(req)
  }

  /** Sends a request and parses a 2xx JSON answer. @throws ApiError for any other status */
  async #json<T>(req: RawRequest): Promise<T> {
    return (await this.#jsonWithStatus<T>(req)).body
  }

  /** {@link #json}, with the answer's status code. */
  async #jsonWithStatus<T>(req: RawRequest): Promise<{ status: number; body: T }> {
    const res = await this.request(req)
    if (res.status < 200 || res.status > 299) {
      const ra = res.headers['retry-after']
      throw apiErrorFrom(res.status, res.body, Array.isArray(ra) ? ra[0] : ra)
    }
    return { status: res.status, body: JSON.parse(res.body) as T }
  }

  #writeQuery(opts: WriteOptions, extra?: Record<string, string>): URLSearchParams {
    const q = new URLSearchParams()
    const fm = opts.fieldManager ?? this.#opts.fieldManager
    if (fm) q.set('fieldManager', fm)
    if (opts.dryRun) q.set('dryRun', 'All')
    for (const [k, v] of Object.entries(extra ?? {})) q.set(k, v)
    return q
  }

  #objectPath(obj: ObjectLike | ObjectRef, subresource?: string): string {
    const name = 'metadata' in obj ? obj.metadata.name : obj.name
    const namespace = 'metadata' in obj ? obj.metadata.namespace : obj.namespace
    if (!name) throw new Error(`${obj.kind} has no name`)
    return resourcePath(this.info(obj), { namespace, name, subresource })
  }

  /** GETs one object. @throws ApiError (404 when absent) */
  get<T extends KubeObject = KubeObject>(ref: ObjectRef, opts: { subresource?: string; signal?: AbortSignal } = {}): Promise<T> {
    return this.#json<T>({ method: 'GET', path: this.#objectPath(ref, opts.subresource), ...(opts.signal ? { signal: opts.signal } : {}) })
  }

  /**
   * Lists objects, following `continue` pages as client-go's pager does (tools/pager): later pages
   * carry no resourceVersion, and a 410 Expired on a later page (the token outlived the server's
   * compaction) is answered by one unpaginated list at the resourceVersion first asked for. Items
   * get `apiVersion`/`kind` where the server omits them.
   */
  async list<T extends KubeObject = KubeObject>(ref: ResourceRef, opts: ListOptions = {}): Promise<ListResult<T>> {
    const path = resourcePath(this.info(ref), { namespace: opts.namespace })
    const page = (cont: string | undefined, limit: number | undefined): Promise<KubeList<T>> => {
      const q = new URLSearchParams()
      if (opts.labelSelector) q.set('labelSelector', opts.labelSelector)
      if (opts.fieldSelector) q.set('fieldSelector', opts.fieldSelector)
      if (limit) q.set('limit', String(limit))
      if (cont) q.set('continue', cont)
      else if (opts.resourceVersion !== undefined) q.set('resourceVersion', opts.resourceVersion)
      return this.#json<KubeList<T>>({ method: 'GET', path, query: q, ...(opts.signal ? { signal: opts.signal } : {}), ...(opts.metadataOnly ? { accept: METADATA_LIST_ACCEPT } : {}) })
    }
    const items: T[] = []
    const collect = (answer: KubeList<T>): void => {
      for (const item of answer.items ?? []) {
        item.apiVersion ??= ref.apiVersion
        item.kind ??= ref.kind
        items.push(opts.transform ? (opts.transform(item) as T) : item)
      }
    }
    const result = (first: KubeList<T>, paginated: boolean): ListResult<T> => ({ apiVersion: first.apiVersion, kind: first.kind, metadata: { resourceVersion: first.metadata?.resourceVersion ?? '' }, items, paginated })
    let first: KubeList<T> | undefined
    let cont: string | undefined
    for (;;) {
      let answer: KubeList<T>
      try {
        answer = await page(cont, opts.limit)
      } catch (e) {
        if (cont === undefined || !isExpired(e)) throw e
        const full = await page(undefined, undefined)
        items.length = 0
        collect(full)
        return result(full, true)
      }
      first ??= answer
      collect(answer)
      cont = answer.metadata?.continue || undefined
      if (!cont || opts.firstPageOnly) return result(first, answer !== first || cont !== undefined)
    }
  }

  /**
   * Opens a watch: newline-delimited JSON events go to `onEvent` in order; `onDone` is called
   * exactly once, without an error when the server ended the stream or `stop()` was called, with
   * an {@link ApiError} for a non-200 answer, or an Error for a dropped or stalled connection.
   * An ERROR event is delivered to `onEvent` like any other (the stream ends after it).
   * @returns stop: ends the watch (idempotent)
   */
  watch<T extends KubeObject = KubeObject>(ref: ResourceRef, opts: WatchOptions, onEvent: (e: WatchEvent<T>) => void, onDone: (err?: Error) => void): () => void {
    return watchStream(this.#transport, () => this.info(ref), opts, onEvent, onDone)
  }

  /** POSTs a new object. @throws ApiError (409 AlreadyExists, 422 Invalid, …) */
  create<T extends KubeObject = KubeObject>(obj: ObjectLike, opts: WriteOptions = {}): Promise<T> {
    const path = resourcePath(this.info(obj), { namespace: obj.metadata.namespace })
    return this.#json<T>({ method: 'POST', path, query: this.#writeQuery(opts), body: obj, ...(opts.signal ? { signal: opts.signal } : {}) })
  }

  /** PUTs an object (optimistic concurrency through its `metadata.resourceVersion`). */
  replace<T extends KubeObject = KubeObject>(obj: ObjectLike, opts: WriteOptions = {}): Promise<T> {
    return this.#json<T>({ method: 'PUT', path: this.#objectPath(obj), query: this.#writeQuery(opts), body: obj, ...(opts.signal ? { signal: opts.signal } : {}) })
  }

  /** PUTs an object's `/status`. */
  replaceStatus<T extends KubeObject = KubeObject>(obj: ObjectLike, opts: WriteOptions = {}): Promise<T> {
    return this.#json<T>({ method: 'PUT', path: this.#objectPath(obj, 'status'), query: this.#writeQuery(opts), body: obj })
  }

  /**
   * Server-side apply: `PATCH` with `application/apply-patch+yaml` and the object serialised as
   * JSON (a YAML subset) exactly as given — no field is added, dropped or converted.
   */
  apply<T extends KubeObject = KubeObject>(obj: ObjectLike, opts: ApplyOptions = {}): Promise<T> {
    return this.applyObject<T>(obj, opts).then((r) => r.object)
  }

  /**
   * {@link apply}, telling whether the object was created by it (201) or existed (200).
   * @throws Error at once (before sending) without a field manager
   */
  applyObject<T extends KubeObject = KubeObject>(obj: ObjectLike, opts: ApplyOptions = {}): Promise<ApplyResult<T>> {
    const query = this.#writeQuery(opts, opts.force ? { force: 'true' } : undefined)
    if (!query.has('fieldManager')) throw new Error('server-side apply needs a fieldManager')
    return this.#jsonWithStatus<T>({ method: 'PATCH', path: this.#objectPath(obj, opts.subresource), query, body: applyBody(obj), contentType: 'application/apply-patch+yaml' }).then(({ status, body }) => ({ object: body, created: status === 201 }))
  }

  /** PATCHes an object with a merge, JSON or strategic-merge patch. */
  patch<T extends KubeObject = KubeObject>(ref: ObjectRef, patch: unknown, opts: PatchOptions): Promise<T> {
    return this.#json<T>({ method: 'PATCH', path: this.#objectPath(ref, opts.subresource), query: this.#writeQuery(opts), body: patch, contentType: patchTypes[opts.type] })
  }

  /** PATCHes an object's `/status`. */
  patchStatus<T extends KubeObject = KubeObject>(ref: ObjectRef, patch: unknown, opts: Omit<PatchOptions, 'subresource'>): Promise<T> {
    return this.patch<T>(ref, patch, { ...opts, subresource: 'status' })
  }

  /** DELETEs an object; answers the server's body (a Status, or the object while finalizers hold it). @throws ApiError (404 when absent, 409 on a failed precondition) */
  delete(ref: ObjectRef, opts: DeleteOptions = {}): Promise<KubeObject> {
    const body: Record<string, unknown> = { apiVersion: 'v1', kind: 'DeleteOptions' }
    if (opts.propagationPolicy) body.propagationPolicy = opts.propagationPolicy
    if (opts.preconditions) body.preconditions = opts.preconditions
    if (opts.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = opts.gracePeriodSeconds
    const query = new URLSearchParams()
    if (opts.dryRun) query.set('dryRun', 'All')
    return this.#json<KubeObject>({ method: 'DELETE', path: this.#objectPath(ref), query, body })
  }

  /** Closes idle keep-alive connections (open watches end on their own stop functions). */
  close(): void {
    this.#transport.close()
  }
}
