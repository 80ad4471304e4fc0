/**
 * Which failed requests a reconcile reports on the CR (Degraded, a Warning event, a status write)
 * and which it only retries. A definite refusal (a 4xx: invalid, forbidden, not found…) is
 * reported at once: retrying will not change it. Throttling and shedding — a 429, or a 5xx with
 * `Retry-After` (API Priority and Fairness; a terminating apiserver,
 * apiserver/pkg/server/filters/with_retry_after.go) — is the server asking for fewer requests:
 * the client has already retried it in-request (retry.ts), and a status write and an event would be
 * two more requests to the server that asked for less, so it is never reported on the CR, only
 * logged, counted and requeued with backoff, as controller-runtime requeues an error without
 * touching the object. Anything else that is not definite (a 5xx without `Retry-After`, an
 * optimistic-lock conflict, a timeout, a dropped connection) is reported once it has lasted
 * {@link SUSTAINED_FAILURE_MS}.
 */
import { apiErrorIn } from '../controller/client.ts'

/**
 * How long a CR's reconciles must keep failing transiently before the CR says so. Longer than an
 * apiserver restart in a control-plane rolling upgrade (its shutdown delay and the replacement
 * becoming ready take a minute or two, behind a load balancer that may send requests to it
 * meanwhile); shorter than a Deployment's default progress deadline (600 s,
 * `progressDeadlineSeconds`), Kubernetes' own point at which a rollout that makes no progress
 * is reported, so a persistent failure shows before a user waiting on the rollout gives up.
 */
export const SUSTAINED_FAILURE_MS = 5 * 60_000

/** Why a failure is only retried: the metric's `reason`. */
export type TransientReason = 'Throttled' | 'Conflict' | 'ServerError' | 'Unreachable'

/** How kube-apiserver's field manager words an applied configuration of the wrong types. */
const TYPED_PATCH_REFUSAL = 'failed to create typed patch object'

/** Codes of failed connections (node's system errors). */
const CONNECTION_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ECONNABORTED'])


/**
 * The transient reason of a failed request, or undefined for a definite failure (a refusal, or an
 * error of the operator's own such as an unknown kind).
 */
export function transientReason(err: unknown): TransientReason | undefined {
  const api = apiErrorIn(err)
  if (api) {
    if (api.status === 429) return 'Throttled'
    // A server-side apply whose configuration does not fit the kind's schema is answered 500 by
    // the field manager (structured-merge-diff's "failed to create typed patch object"), but it is
    // the object that is wrong: the same apply fails the same way however often it is retried.
    if (api.status === 500 && api.message.startsWith(TYPED_PATCH_REFUSAL)) return undefined
    if (api.status >= 500) return api.retryAfterSeconds !== undefined ? 'Throttled' : 'ServerError'
    // An optimistic-lock conflict or a precondition the cache has not caught up with; AlreadyExists is a definite answer.
    if (api.status === 409 && api.reason === 'Conflict') return 'Conflict'
    return undefined
  }
  const e = err as NodeJS.ErrnoException | undefined
  if (e?.code !== undefined && CONNECTION_CODES.has(e.code)) return 'Unreachable'
  // The client's own words for an answer that never came (transport.ts open, read).
  if (/: (no answer|no response headers) within \d+ ms|connection closed before the answer was complete|socket hang up/.test(e?.message ?? '')) return 'Unreachable'
  return undefined
}

/** What {@link TransientFailures.judge} decides. */
export type Judgement = { report: true } | { report: false; reason: TransientReason; failingForMs: number }

/** Each CR's run of transient failures (by uid): when it began. */
export class TransientFailures {
  #since = new Map<string, number>()
  #now: () => number
  readonly sustainedMs: number

  constructor(now: () => number, sustainedMs = SUSTAINED_FAILURE_MS) {
    this.#now = now
    this.sustainedMs = sustainedMs
  }

  /** Whether a failure of the CR `uid` is reported on it; a transient one starts or continues its run. */
  judge(uid: string | undefined, err: unknown): Judgement {
    const reason = transientReason(err)
    if (reason === undefined) return { report: true }
    const now = this.#now()
    const key = uid ?? ''
    const since = this.#since.get(key) ?? now
    this.#since.set(key, since)
    const failingForMs = now - since
    if (reason !== 'Throttled' && failingForMs >= this.sustainedMs) return { report: true }
    return { report: false, reason, failingForMs }
  }

  /** Ends a CR's run (a reconcile that completed, or a CR that is gone). */
  clear(uid: string | undefined): void {
    this.#since.delete(uid ?? '')
  }
}
