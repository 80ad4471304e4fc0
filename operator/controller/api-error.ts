/** A failed request as a value: the HTTP status and the server's Status (reason, details, Retry-After), and the predicates callers test it with. */

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
