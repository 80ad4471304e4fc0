/**
 * The API server's error bodies: `metav1.Status` objects with the exact reasons, codes and
 * messages that apimachinery's `k8s.io/apimachinery/pkg/api/errors` constructors produce, so a
 * client that matches on them (client-go style `IsConflict`, kubectl's printed message) behaves
 * here as it does against a real cluster.
 */
import type { FieldCause, ResourceType } from './types.ts'

/** `details` of a Status body. */
export interface StatusDetails {
  name?: string
  group?: string
  kind?: string
  uid?: string
  causes?: { reason?: string; message?: string; field?: string }[]
  retryAfterSeconds?: number
}

/** The JSON body of an error (or a delete's success) response. */
export interface StatusBody {
  kind: 'Status'
  apiVersion: 'v1'
  metadata: Record<string, never>
  status: 'Failure' | 'Success'
  message?: string
  reason?: string
  details?: StatusDetails
  code?: number
}

/** An error carrying the Status the HTTP layer sends, plus optional extra headers (Retry-After). */
export class StatusError extends Error {
  readonly status: StatusBody
  readonly headers: Record<string, string>
  constructor(code: number, reason: string, message: string, details?: StatusDetails, headers: Record<string, string> = {}) {
    super(message)
    this.status = failure(code, reason, message, details)
    this.headers = headers
  }
  get code(): number {
    return this.status.code ?? 500
  }
}

/** Builds a Failure Status body in the server's key order; `details` is omitted when empty (omitempty). */
export function failure(code: number, reason: string, message: string, details?: StatusDetails): StatusBody {
  // An empty reason is StatusReasonUnknown, which the server omits (errors that were not API errors).
  const body: StatusBody = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message }
  if (reason !== '') body.reason = reason
  if (details && Object.keys(details).length > 0) body.details = details
  body.code = code
  return body
}

/** `deployments.apps`, or just `pods` for the core group: how messages name a resource. */
export function qualifiedResource(group: string, resource: string): string {
  return group === '' ? resource : `${resource}.${group}`
}

/** `Deployment.apps`, or `Service` for the core group: how Invalid messages name a kind. */
export function qualifiedKind(group: string, kind: string): string {
  return group === '' ? kind : `${kind}.${group}`
}

function resourceDetails(group: string, resource: string, name: string): StatusDetails {
  const d: StatusDetails = { name }
  if (group !== '') d.group = group
  d.kind = resource
  return d
}

/** 404 `deployments.apps "x" not found`. */
export function notFound(group: string, resource: string, name: string): StatusError {
  return new StatusError(404, 'NotFound', `${qualifiedResource(group, resource)} "${name}" not found`, resourceDetails(group, resource, name))
}

/** 404 for a namespaced write whose namespace does not exist: `namespaces "x" not found`. */
export function namespaceNotFound(namespace: string): StatusError {
  return notFound('', 'namespaces', namespace)
}

/** 409 `deployments.apps "x" already exists`. */
export function alreadyExists(group: string, resource: string, name: string): StatusError {
  return new StatusError(409, 'AlreadyExists', `${qualifiedResource(group, resource)} "${name}" already exists`, resourceDetails(group, resource, name))
}

/** 409 optimistic-lock failure with the server's exact wording. */
export function conflict(group: string, resource: string, name: string, why = 'the object has been modified; please apply your changes to the latest version and try again'): StatusError {
  return new StatusError(409, 'Conflict', `Operation cannot be fulfilled on ${qualifiedResource(group, resource)} "${name}": ${why}`, resourceDetails(group, resource, name))
}

/** Renders one cause as the server prints it inside an Invalid message: `field: message`. */
function causeText(c: FieldCause): string {
  return c.field ? `${c.field}: ${c.message}` : c.message
}

/**
 * 422 Invalid: `Deployment.apps "x" is invalid: spec.replicas: Invalid value: …`, several causes
 * as `is invalid: [e1, e2]`.
 */
export function invalid(group: string, kind: string, name: string, causes: FieldCause[]): StatusError {
  // field.ErrorList.ToAggregate prints an error once however often it occurs; the causes keep all.
  const texts = [...new Set(causes.map(causeText))]
  const summary = texts.length === 1 ? texts[0] : `[${texts.join(', ')}]`
  const details: StatusDetails = { name }
  if (group !== '') details.group = group
  details.kind = kind
  details.causes = causes.map((c) => ({ reason: c.reason, message: c.message, field: c.field }))
  return new StatusError(422, 'Invalid', `${qualifiedKind(group, kind)} "${name}" is invalid: ${summary}`, details)
}

/** 422 Invalid naming a resource type's kind. */
export function invalidObject(type: ResourceType, name: string, causes: FieldCause[]): StatusError {
  return invalid(type.group, type.kind, name, causes)
}

/** 422 about the request's options (`PatchOptions.meta.k8s.io "" is invalid: …`). */
export function invalidOptions(optionsKind: 'PatchOptions' | 'DeleteOptions' | 'CreateOptions' | 'UpdateOptions', causes: FieldCause[]): StatusError {
  return invalid('meta.k8s.io', optionsKind, '', causes)
}

/** 400 BadRequest. */
export function badRequest(message: string): StatusError {
  return new StatusError(400, 'BadRequest', message)
}

/** 410 Expired for a watch or list from a compacted resourceVersion. */
export function expired(requested: number, oldest: number): StatusError {
  return new StatusError(410, 'Expired', `too old resource version: ${requested} (${oldest})`)
}

/** 415 for patch types the resource does not accept. */
export function unsupportedMediaType(accepted: string[]): StatusError {
  return new StatusError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`)
}

/** 405 MethodNotAllowed. */
export function methodNotAllowed(): StatusError {
  return new StatusError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource')
}

/** 404 for a path the server does not serve at all. */
export function resourceNotFound(): StatusError {
  return new StatusError(404, 'NotFound', 'the server could not find the requested resource')
}

/** 429 with `Retry-After`. */
export function tooManyRequests(retryAfterSeconds: number): StatusError {
  return new StatusError(429, 'TooManyRequests', 'Too many requests, please try again later.', { retryAfterSeconds }, { 'Retry-After': String(retryAfterSeconds) })
}

/** 500 InternalError. */
export function internalError(message: string): StatusError {
  return new StatusError(500, 'InternalError', `Internal error occurred: ${message}`, { causes: [{ message }] })
}

/** 503 ServiceUnavailable. */
export function serviceUnavailable(message = 'the server is currently unable to handle the request'): StatusError {
  return new StatusError(503, 'ServiceUnavailable', message)
}

/**
 * 504 Timeout, as a request that outlived its deadline is answered (apimachinery errors.NewTimeoutError,
 * from apiserver endpoints/handlers/rest.go finishRequest).
 */
export function timeout(): StatusError {
  return new StatusError(504, 'Timeout', 'Timeout: request did not complete within requested timeout - context deadline exceeded')
}

/** 403 Forbidden. */
export function forbidden(group: string, resource: string, name: string, why: string): StatusError {
  // errors.NewForbidden leaves the name out when there is none.
  const what = name === '' ? qualifiedResource(group, resource) : `${qualifiedResource(group, resource)} "${name}"`
  return new StatusError(403, 'Forbidden', `${what} is forbidden: ${why}`, resourceDetails(group, resource, name))
}

/** The Success Status a DELETE returns for most kinds. */
export function deleteSuccess(group: string, resource: string, name: string, uid: string): StatusBody {
  const details: StatusDetails = { name }
  if (group !== '') details.group = group
  details.kind = resource
  details.uid = uid
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details }
}
