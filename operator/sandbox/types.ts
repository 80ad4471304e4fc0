import type { UserInfo } from './auth/user.ts'
import type { FieldCause, Json, KubeObject, ScaleSubresource } from '../kube/object.ts'

/**
 * The sandbox cluster's shared vocabulary: objects, resource types, the schema topology that
 * server-side apply needs, and the in-process request interface that the HTTP layer and the
 * simulated controllers both use. The objects themselves are the API's (kube/object.ts).
 */

export type { Json, JsonObject, OwnerReference, ManagedFieldsEntry, ObjectMeta, KubeObject, FieldCause, ScaleSubresource } from '../kube/object.ts'


/**
 * How server-side apply sees one node of an object's schema (structured-merge-diff's view).
 * - `struct`: known fields, merged field by field;
 * - `map`: free-form string keys (labels, nodeSelector, CR maps), granular unless `atomic`;
 * - `list`: `atomic` (replaced whole, the default for unmarked lists), `set` (of scalars),
 *   or `map` keyed by `keys` (items merged by key);
 * - `scalar`: a leaf;
 * - `any`: unknown shape (x-kubernetes-preserve-unknown-fields, int-or-string); maps granular, lists atomic.
 */
export type Topology =
  | { type: 'struct'; fields: Record<string, Topology>; atomic?: boolean; preserveUnknown?: boolean }
  | { type: 'map'; values: Topology; atomic?: boolean }
  | { type: 'list'; items: Topology; listType: 'atomic' | 'set' | 'map'; keys?: string[]; keyDefaults?: Record<string, Json> }
  | { type: 'scalar' }
  | { type: 'any' }

export interface PrinterColumn {
  name: string
  type: string
  jsonPath: string
  description?: string
  format?: string
  priority?: number
}

/** A resource the sandbox serves: built-in or from an Established CRD. */
export interface ResourceType {
  group: string // '' for core
  version: string
  resource: string // plural
  singular: string
  kind: string
  listKind: string
  namespaced: boolean
  verbs: string[]
  shortNames?: string[]
  categories?: string[]
  subresources: { status?: boolean; scale?: ScaleSubresource; resize?: boolean }
  /** Schema topology for apply/strategic merge; `{type:'any'}` where unknown. */
  topology: Topology
  /** True for custom resources (no strategic merge patch, resourceVersion required on update, …). */
  custom: boolean
  /** Whether the object has a spec-driven generation (Deployment, PDB, CRs). */
  generation: 'spec' | 'none' | 'all-but-metadata'
  /** Server-side defaulting, applied in place (built-ins: the reference's defaults; CRs: schema `default`s). */
  default?(obj: KubeObject): void
  /** Pruning of unknown fields (CRs), in place; returns the pruned paths for the Warning header. */
  prune?(obj: KubeObject): string[]
  /** The paths {@link prune} would remove, leaving the object as it is (built-in kinds). */
  undeclared?(obj: KubeObject): string[]
  /** The error decoding into the kind's Go type fails with: a value of the wrong JSON type, a quantity that does not parse (built-in kinds). */
  decodeError?(obj: KubeObject): string | undefined
  /** What converting an apply configuration to the kind's typed value reports: wrong types, undeclared fields (built-in kinds). */
  applyErrors?(obj: KubeObject): string[]
  /** Validation (of an update when `old` is given); an empty list means valid. */
  validate?(obj: KubeObject, old?: KubeObject): FieldCause[]
  /** Extra printer columns for `Table` responses (CRDs' additionalPrinterColumns). */
  printerColumns?: PrinterColumn[]
  /** A custom resource version's `openAPIV3Schema` as the CRD gives it (absent: none given), for /openapi. */
  openAPIV3Schema?: Record<string, unknown>
}

export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection'

/** A request to the sandbox, after URL parsing; the HTTP layer and in-process controllers both build these. */
export interface ApiRequest {
  verb: Verb
  group: string
  version: string
  resource: string
  subresource?: string
  namespace?: string
  name?: string
  /** Parsed JSON body, or raw text for apply patches in YAML. */
  body?: unknown
  contentType?: string
  query: URLSearchParams
  userAgent?: string
  accept?: string
  /** Who the request is from (HTTP requests, after authentication and impersonation); in-process requests have none. */
  user?: UserInfo
  /** In-process callers only: run the request through the fault injector (HTTP requests always are). */
  injectFaults?: boolean
  /** In-process callers only: count the request in the accounting (HTTP requests always are). */
  account?: boolean
  /**
   * In-process callers only: the body stands for a protobuf body decoded into the kind's Go type,
   * as the requests of kube-controller-manager, the scheduler and the kubelet are (they send
   * protobuf): it cannot hold a field the type lacks, so the walk that looks for unknown fields
   * is left out. The sandbox's own controllers send it (test/sandbox-controllers-typed.test.ts
   * holds that what they write has no unknown field).
   */
  typed?: boolean
}

export interface ApiResponse {
  status: number
  body: unknown
  headers?: Record<string, string>
}

export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR'
  object: unknown
}

/**
 * In-process access to the sandbox's API with exactly the semantics of its HTTP endpoints
 * (validation, defaulting, managedFields, accounting, faults where the caller asks for them).
 * The simulated kube-controller-manager and kubelet use it instead of a socket.
 */
export interface ClusterAccess {
  handle(req: ApiRequest): Promise<ApiResponse>
  /**
   * Starts a watch described by a `watch` request; returns a function that stops it.
   * `onClose`, if given, is called when the server ends the watch (timeoutSeconds, 410 Expired).
   */
  watch(req: ApiRequest, onEvent: (event: WatchEvent) => void, onClose?: () => void): () => void
  /**
   * The same watch, delivering the stored objects themselves, deeply frozen and shared by every
   * such watcher, instead of a private copy each (the in-process controllers' informers, which
   * only read them). Optional: {@link watch} is used where absent.
   */
  watchShared?(req: ApiRequest, onEvent: (event: WatchEvent) => void, onClose?: () => void): () => void
}
