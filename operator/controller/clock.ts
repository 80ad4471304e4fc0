/**
 * Time for the controller runtime: a {@link Clock} that the queue, informer and leader elector
 * take as an option so their tests can run on a {@link FakeClock}, and the jittered exponential
 * backoff that client-go uses wherever something is retried.
 */

/** An opaque timer handle. */
export type TimerHandle = { readonly id: number } | NodeJS.Timeout

/** What the runtime needs of time: the current instant and one-shot timers. */
export interface Clock {
  /** Milliseconds since the epoch (wall time: what is written into objects). */
  now(): number
  /**
   * Milliseconds since an arbitrary origin, never going backwards when the wall clock is stepped
   * (NTP, a VM resumed): what durations and deadlines are measured with, as Go's monotonic clock
   * reading does for client-go. A clock without it measures with {@link Clock.now}.
   */
  monotonic?(): number
  /** Calls `fn` once after `ms` milliseconds. */
  setTimeout(fn: () => void, ms: number): TimerHandle
  /** Cancels a timer; a no-op for a timer that already fired. */
  clearTimeout(handle: TimerHandle): void
}

/** The process clock. */
export const realClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, Math.max(0, ms)),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
}

/** A manual clock for deterministic tests: time moves only through {@link FakeClock.advance}. */
export class FakeClock implements Clock {
  #now: number
  #nextId = 1
  #timers = new Map<number, { at: number; fn: () => void }>()

  /** @param start the initial instant (ms) */
  constructor(start = 0) {
    this.#now = start
  }

  /** The current fake instant. */
  now(): number {
    return this.#now
  }

  /** The fake instant: a fake clock is never stepped backwards. */
  monotonic(): number {
    return this.#now
  }

  /** Registers a timer at `now + ms`. */
  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.#nextId++
    this.#timers.set(id, { at: this.#now + Math.max(0, ms), fn })
    return { id }
  }

  /** Cancels a timer. */
  clearTimeout(handle: TimerHandle): void {
    if (typeof handle === 'object' && 'id' in handle) this.#timers.delete(handle.id)
  }

  /** How many timers are pending. */
  get pending(): number {
    return this.#timers.size
  }

  /** Moves time forward by `ms`, firing due timers in order of their due time (then creation). */
  advance(ms: number): void {
    const target = this.#now + ms
    for (;;) {
      let nextId: number | undefined
      let nextAt = Infinity
      for (const [id, t] of this.#timers) {
        if (t.at <= target && t.at < nextAt) {
          nextAt = t.at
          nextId = id
        }
      }
      if (nextId === undefined) break
      const timer = this.#timers.get(nextId)
      this.#timers.delete(nextId)
      this.#now = Math.max(this.#now, nextAt)
      timer?.fn()
    }
    this.#now = target
  }
}

/** Parameters of a jittered exponential backoff. */
export interface BackoffOptions {
  /** First delay (ms). */
  initialMs: number
  /** Upper bound of every delay, jitter included (ms). */
  maxMs: number
  /** Growth per attempt (default 2). */
  factor?: number
  /** Up to this fraction of the delay is added at random (default 0.2), so retriers spread out. */
  jitter?: number
}

/**
 * The delay before retry number `attempt` (0-based): `initial · factor^attempt`, plus up to
 * `jitter` of itself at random, capped at `maxMs`.
 */
export function backoffDelay(attempt: number, opts: BackoffOptions, random: () => number = Math.random): number {
  const factor = opts.factor ?? 2
  const jitter = opts.jitter ?? 0.2
  // Cap the exponent first: 2^1100 is Infinity and Infinity·0 is NaN.
  const base = Math.min(opts.maxMs, opts.initialMs * Math.pow(factor, Math.min(attempt, 1000)))
  return Math.min(opts.maxMs, base + base * jitter * random())
}

/** A retry counter that yields growing delays until {@link Backoff.reset}. */
export class Backoff {
  #opts: BackoffOptions
  #random: () => number
  #attempt = 0

  /** @param random source of jitter in [0, 1) */
  constructor(opts: BackoffOptions, random: () => number = Math.random) {
    this.#opts = opts
    this.#random = random
  }

  /** The next delay (ms); each call grows the following one. */
  next(): number {
    return backoffDelay(this.#attempt++, this.#opts, this.#random)
  }

  /** Consecutive failures counted so far. */
  get attempts(): number {
    return this.#attempt
  }

  /** Starts over from the initial delay (after a success). */
  reset(): void {
    this.#attempt = 0
  }
}
