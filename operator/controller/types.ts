/** The shapes the REST client speaks: objects, references, lists, watch events, and the options of each verb. */
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

/** Where a kind is served. */
export interface ResourceInfo {
  /** `''` for the core group. */
  group: string
  version: string
  /** The plural resource name in URLs. */
  plural: string
  namespaced: boolean
}
