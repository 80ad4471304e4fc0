/** The answers of the request pipeline: the Reply shape, serialised lazily, with warnings as headers; the patch content types; the request's field manager and dry-run flag. */
import { StatusError } from '../errors.ts'
import type { ApiRequest, KubeObject, ResourceType, WatchEvent } from '../types.ts'

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

/** The patch content types, as the API server names them. */
export const jsonPatchType = 'application/json-patch+json'
export const mergePatchType = 'application/merge-patch+json'
export const strategicPatchType = 'application/strategic-merge-patch+json'
export const applyPatchType = 'application/apply-patch+yaml'
export const applyPatchCbor = 'application/apply-patch+cbor'

/** Patch type name used in accounting. */
export function patchTypeOf(contentType: string | undefined): string | undefined {
  const ct = (contentType ?? '').split(';')[0]?.trim()
  if (ct === jsonPatchType) return 'json'
  if (ct === mergePatchType) return 'merge'
  if (ct === strategicPatchType) return 'strategic'
  if (ct === applyPatchType || ct === applyPatchCbor) return 'apply'
  return undefined
}

/** The reply's headers with a `Warning` header per warning (`299 - "…"`). */
export function headerMap(headers: Record<string, string> | undefined, warnings: string[]): Record<string, string> | undefined {
  if (warnings.length === 0) return headers
  return { ...headers, Warning: warnings.map((w) => `299 - ${JSON.stringify(w)}`).join(', ') }
}

/** A reply whose `json` is made when first read (an own enumerable property: a spread copies its value). */
export function lazyJsonReply(status: number, make: () => string, headers?: Record<string, string>): Reply {
  let json: string | undefined
  const r: Reply = { status }
  Object.defineProperty(r, 'json', { enumerable: true, configurable: true, get: () => (json ??= make()) })
  if (headers) r.headers = headers
  return r
}

/** The same reply with other headers, its `json` still made only when read. */
export function withHeaders(reply: Reply, headers: Record<string, string>): Reply {
  const r = Object.defineProperties({} as Reply, Object.getOwnPropertyDescriptors(reply))
  r.headers = headers
  return r
}

/** The reply of a {@link StatusError}: its Status body, code and headers. */
export function errorReply(e: StatusError): Reply {
  const r: Reply = { status: e.code, body: e.status }
  if (Object.keys(e.headers).length > 0) r.headers = e.headers
  return r
}

/** Whether the request asked for `dryRun=All`. */
export function isDryRun(req: ApiRequest): boolean {
  return req.query.getAll('dryRun').includes('All')
}

/** Whether a type is CustomResourceDefinitions. */
export function isCRD(type: ResourceType): boolean {
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

/** A request the server makes itself (the namespace controller's deletions). */
export function internalRequest(): ApiRequest {
  return { verb: 'delete', group: '', version: 'v1', resource: '', query: new URLSearchParams(), userAgent: 'kube-controller-manager' }
}
