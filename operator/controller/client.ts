/**
 * A thin Kubernetes REST client on plain JSON. `@kubernetes/client-node`'s KubeConfig is used for
 * the connection and credentials only: its typed models drop fields they do not know and turn
 * timestamps into Dates, so every body here goes out as given and comes back as the server sent
 * it. Resource paths come from a fixed table (no discovery round trip per call).
 */
import http from 'node:http'
import https from 'node:https'
import { gunzip } from 'node:zlib'
import { promisify } from 'node:util'
import { KubeConfig } from '@kubernetes/client-node'
import { ExecCredentials, trimBearer, type ExecConfig, type ExecStatus } from './credentials.ts'
import { proxyEnvFor } from './proxy.ts'
import { withRetry } from './retry.ts'

/** An owner reference (metav1.OwnerReference). */
export interface OwnerReference {
  apiVersion: string
  kind: string
  name: string
  uid: string
  controller?: boolean
  blockOwnerDeletion?: boolean
}

/** Object metadata as the server returns it; unknown fields are kept. */
export interface ObjectMeta {
  name?: string
  generateName?: string
  namespace?: string
  uid?: string
  resourceVersion?: string
  generation?: number
  creationTimestamp?: string
  deletionTimestamp?: string
  labels?: Record<string, string>
  annotations?: Record<string, string>
  ownerReferences?: OwnerReference[]
  finalizers?: string[]
  [field: string]: unknown
}

/** Any Kubernetes object as plain JSON. */
export interface KubeObject {
  apiVersion: string
  kind: string
  metadata: ObjectMeta
  [field: string]: unknown
}

/** What the client needs to know of an object it sends: its type, name and namespace. */
export interface NamedObject {
  apiVersion: string
  kind: string
  metadata: { name?: string; namespace?: string; [field: string]: unknown }
}

/**
 * An object to send: any {@link KubeObject} literal, or a value of a narrower interface (such as
 * `Memcached`) that has the type, name and namespace.
 */
export type ObjectLike = KubeObject | NamedObject

/** A type of object: `apiVersion` + `kind`. */
export interface ResourceRef {
  apiVersion: string
  kind: string
}

/** One object by type, namespace and name. */
export interface ObjectRef extends ResourceRef {
  name: string
  namespace?: string
}

/** A list answer; items carry `apiVersion` and `kind` (filled in where the server omits them). */
export interface KubeList<T extends KubeObject = KubeObject> {
  apiVersion: string
  kind: string
  metadata: { resourceVersion: string; continue?: string }
  items: T[]
}

/** A list as {@link KubeClient.list} returns it: all pages in one. */
export interface ListResult<T extends KubeObject = KubeObject> extends KubeList<T> {
  /** Whether the server answered in pages (it honoured `limit`): client-go's reflector keeps paginating its relists then. */
  paginated: boolean
}

/** Where a kind is served. */
export interface ResourceInfo {
  /** `''` for the core group. */
  group: string
  version: string
  /** The plural resource name in URLs. */
  plural: string
  namespaced: boolean
}

const builtinResources: Record<string, ResourceInfo> = {
  'v1/Pod': { group: '', version: 'v1', plural: 'pods', namespaced: true },
  'v1/Service': { group: '', version: 'v1', plural: 'services', namespaced: true },
  'v1/ServiceAccount': { group: '', version: 'v1', plural: 'serviceaccounts', namespaced: true },
  'v1/ConfigMap': { group: '', version: 'v1', plural: 'configmaps', namespaced: true },
  'v1/Secret': { group: '', version: 'v1', plural: 'secrets', namespaced: true },
  'v1/Event': { group: '', version: 'v1', plural: 'events', namespaced: true },
  'v1/Namespace': { group: '', version: 'v1', plural: 'namespaces', namespaced: false },
  'apps/v1/Deployment': { group: 'apps', version: 'v1', plural: 'deployments', namespaced: true },
  'apps/v1/ReplicaSet': { group: 'apps', version: 'v1', plural: 'replicasets', namespaced: true },
  'apps/v1/StatefulSet': { group: 'apps', version: 'v1', plural: 'statefulsets', namespaced: true },
  'networking.k8s.io/v1/NetworkPolicy': { group: 'networking.k8s.io', version: 'v1', plural: 'networkpolicies', namespaced: true },
  'policy/v1/PodDisruptionBudget': { group: 'policy', version: 'v1', plural: 'poddisruptionbudgets', namespaced: true },
  'coordination.k8s.io/v1/Lease': { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', namespaced: true },
  'events.k8s.io/v1/Event': { group: 'events.k8s.io', version: 'v1', plural: 'events', namespaced: true },
  'cache.example.com/v1alpha1/Memcached': { group: 'cache.example.com', version: 'v1alpha1', plural: 'memcacheds', namespaced: true },
  'cache.example.com/v1alpha1/ChartRevision': { group: 'cache.example.com', version: 'v1alpha1', plural: 'chartrevisions', namespaced: false },
  'cache.example.com/v1alpha1/Rollout': { group: 'cache.example.com', version: 'v1alpha1', plural: 'rollouts', namespaced: false },
}

/** Thrown for a kind missing from the resource table. */
export class UnknownKindError extends Error {
  override name = 'UnknownKindError'
}

/**
 * The resource table entry of a kind; `extra` entries (keyed `apiVersion/Kind`) take precedence.
 * @throws UnknownKindError
 */
export function resourceInfo(ref: ResourceRef, extra?: Record<string, ResourceInfo>): ResourceInfo {
  const key = `${ref.apiVersion}/${ref.kind}`
  const info = extra?.[key] ?? builtinResources[key]
  if (!info) throw new UnknownKindError(`no resource known for ${ref.kind} in ${ref.apiVersion}`)
  return info
}

/**
 * The URL path of a resource collection or object:
 * `/api/v1/namespaces/ns/pods/name/status`, `/apis/apps/v1/deployments`, …
 */
export function resourcePath(info: ResourceInfo, opts: { namespace?: string | undefined; name?: string | undefined; subresource?: string | undefined } = {}): string {
  let p = info.group === '' ? `/api/${info.version}` : `/apis/${info.group}/${info.version}`
  if (info.namespaced && opts.namespace) p += `/namespaces/${encodeURIComponent(opts.namespace)}`
  p += `/${info.plural}`
  if (opts.name !== undefined) p += `/${encodeURIComponent(opts.name)}`
  if (opts.subresource) p += `/${opts.subresource}`
  return p
}

/** A failed request: the HTTP status and the server's Status object. */
export class ApiError extends Error {
  override name = 'ApiError'
  /** HTTP status code. */
  readonly status: number
  /** Status `reason` (`NotFound`, `Conflict`, `Expired`, …); `''` when the body was not a Status. */
  readonly reason: string
  /** Status `details` (name, kind, causes). */
  readonly details: Record<string, unknown> | undefined
  /** Seconds from a `Retry-After` header (429, some 5xx), when the server sent one. */
  readonly retryAfterSeconds: number | undefined

  /** @param message the server's Status message */
  constructor(status: number, reason: string, message: string, details?: Record<string, unknown>, retryAfterSeconds?: number) {
    super(message)
    this.status = status
    this.reason = reason
    this.details = details
    this.retryAfterSeconds = retryAfterSeconds
  }
}

/** The ApiError in an error or its `cause` chain (a reconcile wraps the client's errors). */
export function apiErrorIn(err: unknown): ApiError | undefined {
  for (let e = err, depth = 0; e !== undefined && e !== null && depth < 5; e = (e as { cause?: unknown }).cause, depth++) if (e instanceof ApiError) return e
  return undefined
}

/** Whether an error is a 404 NotFound from the server. */
export function isNotFound(err: unknown): boolean {
  return err instanceof ApiError && err.status === 404
}

/** Whether an error is a 409 (optimistic-lock or apply conflict, or AlreadyExists). */
export function isConflict(err: unknown): boolean {
  return err instanceof ApiError && err.status === 409
}

/** Whether an error is a 409 AlreadyExists. */
export function isAlreadyExists(err: unknown): boolean {
  return err instanceof ApiError && err.status === 409 && err.reason === 'AlreadyExists'
}

/** Whether an error is a 410 Expired/Gone (a resourceVersion too old to watch from). */
export function isExpired(err: unknown): boolean {
  return err instanceof ApiError && (err.status === 410 || err.reason === 'Expired' || err.reason === 'Gone')
}

/** Parses `Retry-After` (delta seconds or an HTTP date) into seconds; undefined when absent or invalid. */
export function parseRetryAfter(value: string | undefined, now: number = Date.now()): number | undefined {
  if (value === undefined || value.trim() === '') return undefined
  const v = value.trim()
  if (/^\d+$/.test(v)) return Number(v)
  const at = Date.parse(v)
  if (Number.isNaN(at)) return undefined
  return Math.max(0, Math.ceil((at - now) / 1000))
}

/**
 * Whether an error is the watch cache's "Too large resource version" (504 with the cause
 * `ResourceVersionTooLarge`): it has not caught up with the resourceVersion asked for. client-go's
 * reflector then lists from etcd, as for a 410 (tools/cache/reflector.go `isTooLargeResourceVersionError`).
 */
export function isTooLargeResourceVersion(err: unknown): boolean {
  if (!(err instanceof ApiError)) return false
  const causes = err.details?.causes
  if (Array.isArray(causes) && causes.some((c: unknown) => (c as { reason?: unknown } | null)?.reason === 'ResourceVersionTooLarge')) return true
  return err.status === 504 && err.message.includes('Too large resource version')
}

/** Methods Go's transport may send again on another connection (net/http `Request.isReplayable`). */
function replayable(method: string): boolean {
  return method === 'GET' || method === 'HEAD'
}

/** Builds the ApiError of a non-2xx answer from its body (a Status, or anything else). */
export function apiErrorFrom(status: number, body: string, retryAfter?: string): ApiError {
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    parsed = undefined
  }
  const retry = parseRetryAfter(retryAfter)
  if (parsed !== null && typeof parsed === 'object' && (parsed as { kind?: unknown }).kind === 'Status') {
    const s = parsed as { reason?: unknown; message?: unknown; details?: unknown }
    const details = s.details !== null && typeof s.details === 'object' ? (s.details as Record<string, unknown>) : undefined
    return new ApiError(status, typeof s.reason === 'string' ? s.reason : '', typeof s.message === 'string' ? s.message : `HTTP ${status}`, details, retry)
  }
  const text = body.trim().slice(0, 500)
  return new ApiError(status, '', text === '' ? `HTTP ${status}` : `HTTP ${status}: ${text}`, undefined, retry)
}

/** A watch event; `object` is a Status for ERROR and carries only metadata for BOOKMARK. */
export interface WatchEvent<T extends KubeObject = KubeObject> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR'
  object: T
}

/** Options of {@link KubeClient.list}. */
export interface ListOptions {
  /** Omit for all namespaces (or for cluster-scoped kinds). */
  namespace?: string | undefined
  labelSelector?: string | undefined
  fieldSelector?: string | undefined
  /** `"0"` lets the server answer from its cache; unset asks for the latest state. */
  resourceVersion?: string | undefined
  /** Page size; the client follows `continue` tokens and returns all pages. */
  limit?: number | undefined
  /** Aborts the request (e.g. when an informer stops). */
  signal?: AbortSignal | undefined
  /**
   * Ask for the objects' metadata only (`PartialObjectMetadata`), as client-go's metadata client
   * does, with plain JSON as the fallback of a server that does not convert: the items may then
   * be whole objects, so read only their `metadata`.
   */
  metadataOnly?: boolean | undefined
  /**
   * Applied to each item as its page arrives (e.g. an informer's transform): only the transformed
   * items are kept, never every raw page of the list at once.
   */
  transform?: ((item: KubeObject) => KubeObject) | undefined
  /** Only the first page (a probe, e.g. of a selector's syntax): `continue` is not followed. */
  firstPageOnly?: boolean | undefined
}

/** Options of {@link KubeClient.watch}. */
export interface WatchOptions extends Omit<ListOptions, 'limit' | 'signal'> {
  /** Ask for BOOKMARK events (default true). */
  allowWatchBookmarks?: boolean
  /** The server ends the watch after this long (client-go picks 5–10 minutes at random). */
  timeoutSeconds?: number
  /** The watch fails when the server has not sent its response headers within this long (default: the client's request timeout). */
  headerTimeoutMs?: number
  /**
   * The client ends the watch with an error after this long without a byte from the server
   * (a stalled connection); default `timeoutSeconds + 30` when a timeout is given, else none.
   */
  idleTimeoutMs?: number
  /**
   * A watch-list (`sendInitialEvents=true`, with `resourceVersionMatch=NotOlderThan`): the server
   * streams the current objects as ADDED events, then a BOOKMARK annotated
   * `k8s.io/initial-events-end: "true"`, then changes — a list that is never one answer.
   */
  sendInitialEvents?: boolean
}

/** Options of writes. */
export interface WriteOptions {
  /** `?fieldManager=`; defaults to the client's fieldManager. */
  fieldManager?: string
  /** `dryRun=All`: validated and defaulted by the server, never persisted. */
  dryRun?: boolean
  /** Aborts the request (e.g. a leader-election deadline). */
  signal?: AbortSignal
}

/** Options of {@link KubeClient.apply}. */
export interface ApplyOptions extends WriteOptions {
  /** Take ownership of fields other managers own instead of failing with 409. */
  force?: boolean
  /** e.g. `status` */
  subresource?: string
}

/** What {@link KubeClient.applyObject} answers. */
export interface ApplyResult<T extends KubeObject = KubeObject> {
  object: T
  /** The apply created the object (201), rather than changing one that existed (200): apiserver `endpoints/handlers/patch.go`, `wasCreated`. */
  created: boolean
}

/**
 * Accept headers of metadata-only reads, as client-go's metadata client sends them
 * (k8s.io/client-go/metadata/metadata.go), without the protobuf clause (this client reads JSON).
 */
export const METADATA_LIST_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json'
export const METADATA_WATCH_ACCEPT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json'

/** Options of {@link KubeClient.patch}. */
export interface PatchOptions extends WriteOptions {
  /** `merge` (RFC 7386), `json` (RFC 6902) or `strategic` (built-in kinds only). */
  type: 'merge' | 'json' | 'strategic'
  subresource?: string
}

/** Options of {@link KubeClient.delete}. */
export interface DeleteOptions {
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan'
  /** The delete fails with 409 unless the live object still has this uid / resourceVersion. */
  preconditions?: { uid?: string; resourceVersion?: string }
  gracePeriodSeconds?: number
  dryRun?: boolean
}

/** Options of {@link KubeClient}. */
export interface KubeClientOptions {
  /** `User-Agent`, e.g. `memcached-operator/0.1.0 (linux/x64)`; the server's default field manager for non-apply writes is its prefix. */
  userAgent: string
  /** Default `fieldManager` of every write. */
  fieldManager?: string
  /** Timeout of each non-watch request (default 30,000 ms). */
  requestTimeoutMs?: number
  /** Kinds beyond the built-in table, keyed `apiVersion/Kind` (e.g. `example.com/v1/Widget`). */
  resources?: Record<string, ResourceInfo>
  /**
   * Asked before every request but watches: a signal that aborts it, as a context shared by all
   * of a process's work (cancelled when leadership is lost or a shutdown deadline passes). A
   * request is never sent once the signal has fired.
   */
  requestSignal?: () => AbortSignal | undefined
  /**
   * Waited on before every attempt of a request but watches, retries included (client-go's
   * client-side rate limiter, `tryThrottle`): a {@link TokenBucket} of `--kube-api-qps`/`--kube-api-burst`.
   */
  rateLimiter?: { wait(signal?: AbortSignal): Promise<number> }
  /** In-request retries of 429/5xx with `Retry-After` and of reset GETs (default 10, client-go's; 0: none). See retry.ts. */
  maxRetries?: number
  /** Called once per attempt sent, retries included, with its status code (`<error>` without an answer): `rest_client_requests_total`. */
  onRequestResult?: (r: { code: string; method: string; host: string }) => void
}

const patchTypes: Record<PatchOptions['type'], string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
}

const inflate = promisify(gunzip)

/** A raw request of {@link KubeClient.request}. */
export interface RawRequest {
  method: string
  path: string
  query?: URLSearchParams
  /** A string is sent verbatim; anything else as JSON. */
  body?: unknown
  contentType?: string
  /** `Accept`; default `application/json`. */
  accept?: string
  signal?: AbortSignal
}

/** A raw answer. */
export interface RawResponse {
  status: number
  headers: http.IncomingHttpHeaders
  body: string
}

/** The proxy choice (HTTPS_PROXY, HTTP_PROXY, NO_PROXY with CIDRs) lives in proxy.ts. */
export { proxyEnvFor } from './proxy.ts'

/** Whether two lists of TLS material (strings, Buffers, arrays of them) are equal. */
function sameMaterial(a: readonly unknown[], b: readonly unknown[]): boolean {
  const same = (x: unknown, y: unknown): boolean =>
    Buffer.isBuffer(x) && Buffer.isBuffer(y) ? x.equals(y) : Array.isArray(x) && Array.isArray(y) ? x.length === y.length && x.every((v, i) => same(v, y[i])) : x === y
  return a.length === b.length && a.every((v, i) => same(v, b[i]))
}

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
  #kc: KubeConfig
  #server: URL
  #opts: KubeClientOptions
  #agent: http.Agent | undefined
  /** The TLS material #agent was made with: when a file or a plugin rotates it, a new pool. */
  #agentKey: readonly unknown[] = []
  #useConfigAgent: boolean
  #exec: ExecCredentials | undefined

  /** @throws Error when the kubeconfig has no current cluster */
  constructor(kc: KubeConfig, opts: KubeClientOptions) {
    const cluster = kc.getCurrentCluster()
    if (!cluster) throw new Error('kubeconfig has no current cluster')
    this.#server = new URL(cluster.server)
    this.#opts = opts
    this.#useConfigAgent = Boolean(cluster.proxyUrl)
    const user = kc.getCurrentUser()
    const exec = user?.exec as ExecConfig | undefined
    if (exec?.command) this.#exec = new ExecCredentials(exec, cluster)
    // client-node refuses plain http unless TLS verification is off, which means nothing for http;
    // a loopback sandbox or `kubectl proxy` is plain http. Its own exec runner is left out: the
    // plugin runs here (see credentials.ts).
    const plainHttp = this.#server.protocol === 'http:' && !cluster.skipTLSVerify
    if (plainHttp || this.#exec) {
      const view = new KubeConfig()
      view.loadFromOptions({
        clusters: kc.clusters.map((c) => (plainHttp && c.name === cluster.name ? { ...c, skipTLSVerify: true } : c)),
        users: kc.users.map((u) => (this.#exec && u.name === user?.name ? { ...u, exec: undefined } : u)),
        contexts: kc.contexts,
        currentContext: kc.currentContext,
      })
      this.#kc = view
    } else this.#kc = kc
  }

  /** The API server's URL. */
  get server(): string {
    return this.#server.origin + this.#server.pathname.replace(/\/$/, '')
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
   * Connection options (agent, auth headers) for one request, and the exec credential they use.
   * Credentials may rotate, so they are resolved each time: client-node reads certificate, key and
   * CA files anew and re-reads token files; an exec plugin's credential is cached until it expires.
   */
  async #connection(): Promise<{ agent: http.Agent; headers: Record<string, string>; tls: https.RequestOptions; exec?: ExecStatus }> {
    const opts: https.RequestOptions = {}
    await this.#kc.applyToHTTPSOptions(opts)
    const headers: Record<string, string> = {}
    for (const [k, v] of Object.entries(opts.headers ?? {})) if (v !== undefined) headers[k] = String(v)
    if (opts.auth) headers['Authorization'] = `Basic ${Buffer.from(opts.auth).toString('base64')}`
    const exec = await this.#exec?.get()
    if (exec?.token) headers['Authorization'] = `Bearer ${exec.token}`
    if (exec?.clientCertificateData && exec.clientKeyData) {
      opts.cert = exec.clientCertificateData
      opts.key = exec.clientKeyData
    }
    if (headers['Authorization']) headers['Authorization'] = trimBearer(headers['Authorization'])
    if (this.#useConfigAgent && opts.agent instanceof http.Agent) return { agent: opts.agent, headers, tls: {}, ...(exec ? { exec } : {}) }
    // client-node's agents do not keep connections alive; one socket per request is slow at scale.
    // New TLS material (a rotated certificate file, a new certificate from a plugin) gets a new pool
    // and the old connections are closed, as client-go's connection rotation does.
    const key = [opts.ca, opts.cert, opts.key, opts.pfx, opts.passphrase, opts.servername, opts.rejectUnauthorized]
    if (this.#agent && !sameMaterial(key, this.#agentKey)) {
      this.#agent.destroy()
      this.#agent = undefined
    }
    this.#agentKey = key
    const proxy = proxyEnvFor(this.#server)
    this.#agent ??=
      this.#server.protocol === 'https:'
        ? new https.Agent({ keepAlive: true, ca: opts.ca, cert: opts.cert, key: opts.key, pfx: opts.pfx, passphrase: opts.passphrase, servername: opts.servername, ...(opts.rejectUnauthorized !== undefined ? { rejectUnauthorized: opts.rejectUnauthorized } : {}), ...proxy })
        : new http.Agent({ keepAlive: true, ...proxy })
    return { agent: this.#agent, headers, tls: {}, ...(exec ? { exec } : {}) }
  }

  #url(path: string, query?: URLSearchParams): URL {
    const base = this.#server.pathname.replace(/\/$/, '')
    const url = new URL(this.#server.origin + base + path)
    if (query) url.search = query.toString()
    return url
  }

  /**
   * Opens a request and resolves at its response headers. `timeout.until` says what the timeout
   * bounds: the whole exchange (`end`), or only the wait for the headers (`response`, for watches).
   * A request that fails with a reset before any answer on a reused keep-alive socket (one a load
   * balancer or the server closed while it sat idle) is sent again on another connection, as Go's
   * transport does (net/http `persistConn.shouldRetryRequest`): a GET or HEAD always, any other
   * method only when none of it reached the socket (`nothingWrittenError`: the server cannot have
   * processed it); a write that went out may have been processed and is not sent again.
   */
  async #open(req: RawRequest, timeout: { ms: number; until: 'end' | 'response' } | undefined, gzip = false): Promise<{ res: http.IncomingMessage; abort: () => void; exec?: ExecStatus }> {
    const conn = await this.#connection()
    const url = this.#url(req.path, req.query)
    const bodyText = req.body === undefined ? undefined : typeof req.body === 'string' ? req.body : JSON.stringify(req.body)
    const headers: Record<string, string> = { ...conn.headers, Accept: req.accept ?? 'application/json', 'User-Agent': this.#opts.userAgent }
    if (gzip) headers['Accept-Encoding'] = 'gzip'
    if (bodyText !== undefined) {
      headers['Content-Type'] = req.contentType ?? 'application/json'
      headers['Content-Length'] = String(Buffer.byteLength(bodyText))
    }
    const mod = url.protocol === 'https:' ? https : http
    if (req.signal?.aborted) throw new Error(`${req.method} ${req.path}: aborted`)
    return new Promise((resolve, reject) => {
      const r = mod.request(url, { method: req.method, headers, agent: conn.agent, ...conn.tls })
      // The socket's count before this request's bytes: node emits 'socket' before it writes them.
      let sentBefore: number | undefined
      r.once('socket', (s) => (sentBefore = s.bytesWritten))
      // Errors after the first (a socket failing after the answer began) must not go unhandled.
      r.on('error', () => {})
      let timer: NodeJS.Timeout | undefined
      const abort = (): void => {
        if (timer) clearTimeout(timer)
        r.destroy()
      }
      if (timeout !== undefined) {
        const what = timeout.until === 'response' ? 'no response headers' : 'no answer'
        timer = setTimeout(() => r.destroy(new Error(`${req.method} ${req.path}: ${what} within ${timeout.ms} ms`)), timeout.ms)
        r.once('close', () => clearTimeout(timer))
      }
      const signal = req.signal
      if (signal) {
        const aborted = (): void => {
          if (timer) clearTimeout(timer)
          r.destroy(new Error(`${req.method} ${req.path}: aborted`))
        }
        signal.addEventListener('abort', aborted, { once: true })
        r.once('close', () => signal.removeEventListener('abort', aborted))
      }
      r.once('error', (err: NodeJS.ErrnoException) => {
        const nothingWritten = sentBefore !== undefined && r.socket?.bytesWritten === sentBefore
        if (r.reusedSocket && (replayable(req.method) || nothingWritten) && (err.code === 'ECONNRESET' || err.code === 'EPIPE') && !signal?.aborted) {
          if (timer) clearTimeout(timer)
          this.#open(req, timeout, gzip).then(resolve, reject)
          return
        }
        reject(err)
      })
      r.once('response', (res) => {
        if (timeout?.until === 'response' && timer) clearTimeout(timer)
        // A refused exec credential is run for again (client-go refreshes on 401).
        if (res.statusCode === 401) this.#exec?.invalidate(conn.exec)
        resolve({ res, abort, ...(conn.exec ? { exec: conn.exec } : {}) })
      })
      r.end(bodyText)
    })
  }

  /**
   * Sends a request and reads the whole answer (any status). Each attempt waits for the rate
   * limiter; a 429 or 5xx with `Retry-After`, or a GET on a reset connection, is sent again up to
   * `maxRetries` times (retry.ts), and the last answer is returned. A 401 to a request made with an
   * exec plugin's credential is sent once more with a fresh one (the server processed nothing).
   */
  async request(req: RawRequest): Promise<RawResponse> {
    const shared = this.#opts.requestSignal?.()
    if (shared) req = { ...req, signal: req.signal ? AbortSignal.any([req.signal, shared]) : shared }
    const signal = req.signal
    return withRetry(() => this.#attempt(req), { method: req.method, path: req.path, signal, ...(this.#opts.maxRetries !== undefined ? { maxRetries: this.#opts.maxRetries } : {}) })
  }

  /** One attempt of {@link request}: waits for the rate limiter, then sends. */
  async #attempt(req: RawRequest): Promise<RawResponse & { exec?: ExecStatus }> {
    if (this.#opts.rateLimiter) {
      try {
        await this.#opts.rateLimiter.wait(req.signal)
      } catch {
        throw new Error(`${req.method} ${req.path}: aborted`)
      }
    }
    const first = await this.#counted(req)
    return first.status === 401 && first.exec ? (await this.#counted(req)) : first
  }

  /** {@link #read}, counted in `rest_client_requests_total` (client-go's `updateURLMetrics`: one per attempt). */
  async #counted(req: RawRequest): Promise<RawResponse & { exec?: ExecStatus }> {
    const count = this.#opts.onRequestResult
    if (!count) return this.#read(req)
    let code = '<error>'
    try {
      const res = await this.#read(req)
      code = String(res.status)
      return res
    } finally {
      count({ code, method: req.method, host: this.#server.host })
    }
  }

  /**
   * Reads a whole answer. Like Go's transport (net/http `DisableCompression` false, as client-go
   * leaves it), it asks for gzip and inflates a gzip answer: kube-apiserver compresses JSON answers
   * over 128 KiB (apiserver `endpoints/handlers/responsewriters/writers.go`,
   * `defaultGzipThresholdBytes`), which is what a relist of thousands of objects is.
   */
  async #read(req: RawRequest): Promise<RawResponse & { exec?: ExecStatus }> {
    const { res, exec } = await this.#open(req, { ms: this.#opts.requestTimeoutMs ?? 30_000, until: 'end' }, true)
    const chunks: Buffer[] = []
    await new Promise<void>((resolve, reject) => {
      res.on('data', (c: Buffer) => chunks.push(c))
      res.once('end', resolve)
      res.on('error', reject)
      res.once('close', () => {
        if (!res.complete) reject(new Error(`${req.method} ${req.path}: connection closed before the answer was complete`))
      })
    })
    let body = Buffer.concat(chunks)
    if (res.headers['content-encoding'] === 'gzip') {
      try {
        body = await inflate(body)
      } catch (e) {
        throw new Error(`${req.method} ${req.path}: undecodable gzip answer: ${e instanceof Error ? e.message : String(e)}`)
      }
    }
    return { status: res.statusCode ?? 0, headers: res.headers, body: body.toString('utf8'), ...(exec ? { exec } : {}) }
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
    const q = new URLSearchParams({ watch: 'true' })
    if (opts.allowWatchBookmarks !== false) q.set('allowWatchBookmarks', 'true')
    if (opts.labelSelector) q.set('labelSelector', opts.labelSelector)
    if (opts.fieldSelector) q.set('fieldSelector', opts.fieldSelector)
    if (opts.resourceVersion !== undefined) q.set('resourceVersion', opts.resourceVersion)
    if (opts.sendInitialEvents !== undefined) {
      q.set('sendInitialEvents', String(opts.sendInitialEvents))
      q.set('resourceVersionMatch', 'NotOlderThan')
    }
    if (opts.timeoutSeconds) q.set('timeoutSeconds', String(opts.timeoutSeconds))
    const idleMs = opts.idleTimeoutMs ?? (opts.timeoutSeconds ? (opts.timeoutSeconds + 30) * 1000 : undefined)
    let path: string
    try {
      path = resourcePath(this.info(ref), { namespace: opts.namespace })
    } catch (e) {
      queueMicrotask(() => onDone(e as Error))
      return () => {}
    }
    const controller = new AbortController()
    let finished = false
    let idleTimer: NodeJS.Timeout | undefined
    const finish = (err?: Error): void => {
      if (finished) return
      finished = true
      if (idleTimer) clearTimeout(idleTimer)
      onDone(err)
    }
    const stop = (): void => {
      if (finished) return
      controller.abort()
      finish()
    }
    this.#open({ method: 'GET', path, query: q, signal: controller.signal, ...(opts.metadataOnly ? { accept: METADATA_WATCH_ACCEPT } : {}) }, { ms: opts.headerTimeoutMs ?? this.#opts.requestTimeoutMs ?? 30_000, until: 'response' }).then(
      ({ res, abort }) => {
        if (finished) {
          abort()
          return
        }
        controller.signal.addEventListener('abort', abort, { once: true })
        if (res.statusCode !== 200) {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.once('end', () => {
            const ra = res.headers['retry-after']
            finish(apiErrorFrom(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'), Array.isArray(ra) ? ra[0] : ra))
          })
          res.on('error', (e) => finish(e))
          return
        }
        const armIdle = (): void => {
          if (idleMs === undefined) return
          if (idleTimer) clearTimeout(idleTimer)
          idleTimer = setTimeout(() => {
            abort()
            finish(new Error(`watch ${path}: no data for ${idleMs} ms`))
          }, idleMs)
        }
        armIdle()
        // The text after the last complete line; a chunk is scanned from an offset, not re-sliced
        // after every line (a chunk of many events would be copied once per event).
        let buffer = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          armIdle()
          const text = buffer === '' ? chunk : buffer + chunk
          let start = 0
          let nl: number
          while (!finished && (nl = text.indexOf('\n', start)) >= 0) {
            const line = text.slice(start, nl).trim()
            start = nl + 1
            if (line === '') continue
            let event: WatchEvent<T>
            try {
              event = JSON.parse(line) as WatchEvent<T>
            } catch (e) {
              abort()
              finish(new Error(`watch ${path}: undecodable event: ${e instanceof Error ? e.message : String(e)}`))
              return
            }
            try {
              onEvent(event)
            } catch (e) {
              // A throwing handler must not become an uncaught exception inside the socket's callback.
              abort()
              finish(e instanceof Error ? e : new Error(String(e)))
              return
            }
          }
          buffer = start === 0 ? text : text.slice(start)
        })
        res.once('end', () => finish())
        res.on('error', (e) => finish(new Error(`watch ${path}: connection dropped: ${e.message}`)))
        res.once('close', () => {
          if (!res.complete) finish(new Error(`watch ${path}: connection dropped`))
        })
      },
      (err: unknown) => finish(err instanceof Error ? err : new Error(String(err))),
    )
    return stop
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
    this.#agent?.destroy()
    this.#agent = undefined
  }
}
