/**
 * In-request retries, as client-go's REST client makes them (k8s.io/client-go/rest/with_retry.go,
 * request.go): an answer of 429 or any 5xx that carries an integer `Retry-After` (`checkWait`) is
 * sent again after that many seconds, and a GET that failed on a reset or closed connection is
 * sent again at once, up to 10 retries (`maxRetries`); the last answer or error is what the caller
 * gets. APF's rejections ("Too many requests, please try again later.") and a terminating apiserver
 * (apiserver/pkg/server/filters/with_retry_after.go) both send `Retry-After`, so a control-plane
 * upgrade or a throttled moment costs a wait, not a failed reconcile. The wait ends early, with an
 * error, when the request's signal fires.
 */
import type http from 'node:http'
import { realClock, type Clock } from './clock.ts'
import { abortError } from './ratelimit.ts'

/** client-go's `maxRetries` (rest.Request, `r.maxRetries = 10`). */
export const MAX_RETRIES = 10

/**
 * client-go's `checkWait`: for a 429 or a 5xx, the whole seconds of its `Retry-After`
 * (`strconv.Atoi`: an HTTP date or a fraction is not a wait); undefined when the answer is not to
 * be retried.
 */
export function checkWait(status: number, headers: http.IncomingHttpHeaders): number | undefined {
  if (status !== 429 && status < 500) return undefined
  const raw = headers['retry-after']
  const h = (Array.isArray(raw) ? raw[0] : raw)?.trim()
  if (h === undefined || !/^[+-]?\d+$/.test(h)) return undefined
  return Math.max(0, Number(h))
}

/**
 * client-go's `isErrRetryableFunc` (rest/request.go): a GET that failed with a reset connection or
 * an early EOF (`net.IsConnectionReset`, `net.IsProbableEOF`) is retried; writes are not (they
 * may have been carried out).
 */
export function isRetryableError(method: string, err: unknown): boolean {
  if (method !== 'GET') return false
  const e = err as NodeJS.ErrnoException | undefined
  if (e?.code === 'ECONNRESET' || e?.code === 'EPIPE') return true
  return /socket hang up|connection closed before the answer was complete/.test(e?.message ?? '')
}

/** What one attempt answered, as far as retrying is concerned. */
export interface AttemptAnswer {
  status: number
  headers: http.IncomingHttpHeaders
}

/** Options of {@link withRetry}. */
export interface RetryOptions {
  method: string
  /** For the error of an aborted wait. */
  path?: string
  signal?: AbortSignal | undefined
  /** Default {@link MAX_RETRIES}; 0 sends once. */
  maxRetries?: number
  clock?: Clock
}

/** Waits `ms` unless the signal fires first (then rejects with its reason or `what`). */
export function sleep(ms: number, signal: AbortSignal | undefined, what: string, clock: Clock = realClock): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortError(signal, what))
  if (ms <= 0) return Promise.resolve()
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clock.clearTimeout(timer)
      reject(abortError(signal!, what))
    }
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/**
 * Runs `attempt` until it answers something not to be retried, the retries are used up, or the
 * signal fires (client-go's `withRetry.IsNextRetry` and `Before`).
 * @returns the last answer
 * @throws the last attempt's error, or an error for the signal while waiting
 */
export async function withRetry<R extends AttemptAnswer>(attempt: () => Promise<R>, opts: RetryOptions): Promise<R> {
  const max = opts.maxRetries ?? MAX_RETRIES
  const what = `${opts.method} ${opts.path ?? ''}: aborted`
  for (let attempts = 0; ; ) {
    let answer: R
    try {
      answer = await attempt()
    } catch (err) {
      if (attempts >= max || opts.signal?.aborted || !isRetryableError(opts.method, err)) throw err
      attempts++
      continue
    }
    const wait = checkWait(answer.status, answer.headers)
    if (wait === undefined || attempts >= max) return answer
    attempts++
    await sleep(wait * 1000, opts.signal, what, opts.clock)
  }
}
