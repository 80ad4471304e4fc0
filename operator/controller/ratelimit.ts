/**
 * A token bucket, as golang.org/x/time/rate's `Limiter` that client-go's client-side rate limiter
 * (flowcontrol.NewTokenBucketRateLimiter: `--kube-api-qps`/`--kube-api-burst`) and
 * controller-runtime's default controller rate limiter (a 10 qps / 100 burst bucket) are made of:
 * `burst` tokens to start with, refilled at `qps` per second, one taken per event; an event that
 * finds none reserves the next one and waits for it.
 */
import { realClock, type Clock } from './clock.ts'

/** Options of {@link TokenBucket}. */
export interface TokenBucketOptions {
  /** Tokens added per second (> 0). */
  qps: number
  /** Most tokens held at once (≥ 1): how many events may pass at once after a quiet spell. */
  burst: number
  clock?: Clock
}

/** Thrown for a rate or burst the bucket cannot work with. */
export class RateLimitError extends Error {
  override name = 'RateLimitError'
}

/** A token bucket; {@link TokenBucket.reserve} for a delay, {@link TokenBucket.wait} to wait it out. */
export class TokenBucket {
  readonly qps: number
  readonly burst: number
  #clock: Clock
  #tokens: number
  #last: number

  /** @throws RateLimitError for qps ≤ 0 or burst < 1 */
  constructor(opts: TokenBucketOptions) {
    if (!(opts.qps > 0) || !Number.isFinite(opts.qps)) throw new RateLimitError(`rate limit qps must be a positive number, not ${opts.qps}`)
    if (!(opts.burst >= 1) || !Number.isInteger(opts.burst)) throw new RateLimitError(`rate limit burst must be a positive integer, not ${opts.burst}`)
    this.qps = opts.qps
    this.burst = opts.burst
    this.#clock = opts.clock ?? realClock
    this.#tokens = opts.burst
    this.#last = this.#clock.now()
  }

  #refill(): void {
    const now = this.#clock.now()
    if (now > this.#last) this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#last) * this.qps) / 1000)
    this.#last = Math.max(this.#last, now)
  }

  /** Takes a token and answers how long to wait until it is due, in ms (x/time/rate `Reserve().Delay()`). */
  reserve(): number {
    this.#refill()
    this.#tokens -= 1
    return this.#tokens >= 0 ? 0 : Math.ceil((-this.#tokens * 1000) / this.qps)
  }

  /** Gives back a token reserved and not used (a wait that was aborted), as `Reservation.Cancel` does. */
  #cancel(): void {
    this.#refill()
    this.#tokens = Math.min(this.burst, this.#tokens + 1)
  }

  /**
   * Waits for a token (x/time/rate `Wait`).
   * @returns how long it waited, in ms
   * @throws the signal's reason (an Error) when it fires first; the token is given back
   */
  wait(signal?: AbortSignal): Promise<number> {
    if (signal?.aborted) return Promise.reject(abortError(signal))
    const delay = this.reserve()
    if (delay === 0) return Promise.resolve(0)
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        this.#clock.clearTimeout(timer)
        this.#cancel()
        reject(abortError(signal!))
      }
      const timer = this.#clock.setTimeout(() => {
        signal?.removeEventListener('abort', onAbort)
        resolve(delay)
      }, delay)
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }
}

/** An Error for an aborted wait: the signal's reason when it is one. */
export function abortError(signal: AbortSignal, what = 'aborted'): Error {
  return signal.reason instanceof Error && signal.reason.name !== 'AbortError' ? signal.reason : new Error(what)
}
