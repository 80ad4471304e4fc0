/**
 * A work queue in the manner of client-go's `workqueue`: a key waits in the queue once however
 * many times it is added (the dirty set), is handed to one worker at a time (the processing set;
 * a key added while it is processed is processed again after `done`), can be added after a delay,
 * and is retried with per-key exponential backoff. Pure logic over an injectable {@link Clock}.
 *
 * Keys carry a priority, as in controller-runtime's priority queue (pkg/controller/priorityqueue):
 * a worker gets the oldest key of the highest priority waiting; a key added again while it waits
 * keeps its place unless the new priority is higher, which moves it to the end of that priority's
 * line (the maximum of the priorities wins). With one priority it is client-go's FIFO queue.
 */
import { backoffDelay, realClock, type Clock, type TimerHandle } from './clock.ts'
import { TokenBucket } from './ratelimit.ts'

/** Observers of the queue, named after controller-runtime's workqueue metrics. */
export interface QueueHooks {
  /** A key was added (`workqueue_adds_total`); not called for adds that were deduplicated. */
  add?(): void
  /** The number of keys ready in the queue changed (`workqueue_depth`). */
  depth?(n: number): void
  /** A rate-limited retry was scheduled (`workqueue_retries_total`). */
  retry?(): void
  /** Seconds a key waited between being ready and being handed out (`workqueue_queue_duration_seconds`). */
  queueLatency?(seconds: number): void
  /** Seconds a worker held a key, `get` to `done` (`workqueue_work_duration_seconds`). */
  workDuration?(seconds: number): void
}

/** Per-key exponential backoff of {@link WorkQueue.addRateLimited}. */
export interface RateLimiterOptions {
  /** First retry delay (default 5 ms, as controller-runtime). */
  baseMs?: number
  /** Largest delay (default 1,000 s, as controller-runtime). */
  maxMs?: number
  /** Up to this fraction of the delay is added at random (default 0.1). */
  jitter?: number
  /**
   * The bucket every rate-limited retry also takes a token from, whatever its key (default 10 per
   * second, burst 100): controller-runtime's default controller rate limiter is the larger of the
   * per-key backoff and this bucket's delay (workqueue.DefaultTypedControllerRateLimiter), so a
   * fleet failing at once is retried at 10 per second, not all together.
   */
  qps?: number
  burst?: number
}

/** Options of {@link WorkQueue}. */
export interface WorkQueueOptions {
  /** For metrics and logs. */
  name?: string
  clock?: Clock
  /** Source of jitter in [0, 1). */
  random?: () => number
  rateLimiter?: RateLimiterOptions
  hooks?: QueueHooks
}

/** Options of {@link WorkQueue.addRateLimited}. */
export interface RateLimitedOptions {
  /** A floor for the delay, e.g. a server's `Retry-After` (429) in milliseconds. */
  minDelayMs?: number
}

/** A deduplicating, delaying, rate-limited work queue of string keys. */
export class WorkQueue<K extends string = string> {
  /** The queue's name (metrics label). */
  readonly name: string
  #clock: Clock
  #random: () => number
  #limiter: Required<Omit<RateLimiterOptions, 'qps' | 'burst'>>
  #bucket: TokenBucket
  #hooks: QueueHooks
  /** The waiting keys: a FIFO line per priority, highest priority first. */
  #lines: { priority: number; keys: { key: K; seq: number }[]; head: number }[] = []
  /** Each waiting key's priority and place (an entry of a line that does not match is stale). */
  #waitingAt = new Map<K, { priority: number; seq: number }>()
  /** The priority a key added while it is processed is queued at when it is done. */
  #requeueAt = new Map<K, number>()
  #seq = 0
  #dirty = new Set<K>()
  #processing = new Set<K>()
  #readySince = new Map<K, number>()
  #startedAt = new Map<K, number>()
  #failures = new Map<K, number>()
  #waiting = new Map<K, number>()
  #timer: TimerHandle | undefined
  #timerAt = Infinity
  #getters: ((key: K | undefined) => void)[] = []
  #drainers: (() => void)[] = []
  #shuttingDown = false

  constructor(opts: WorkQueueOptions = {}) {
    this.name = opts.name ?? ''
    this.#clock = opts.clock ?? realClock
    this.#random = opts.random ?? Math.random
    this.#limiter = { baseMs: opts.rateLimiter?.baseMs ?? 5, maxMs: opts.rateLimiter?.maxMs ?? 1_000_000, jitter: opts.rateLimiter?.jitter ?? 0.1 }
    this.#bucket = new TokenBucket({ qps: opts.rateLimiter?.qps ?? 10, burst: opts.rateLimiter?.burst ?? 100, clock: this.#clock })
    this.#hooks = opts.hooks ?? {}
  }

  /** Keys ready and waiting for a worker. */
  get length(): number {
    return this.#waitingAt.size
  }

  /** Keys currently held by workers. */
  get inFlight(): number {
    return this.#processing.size
  }

  /** Keys scheduled for later (`addAfter`, `addRateLimited`). */
  get delayed(): number {
    return this.#waiting.size
  }

  /** Whether {@link WorkQueue.shutdown} was called. */
  get shuttingDown(): boolean {
    return this.#shuttingDown
  }

  /**
   * Queues a key now at `priority` (default 0); a no-op when it is already queued at that
   * priority or a higher one (or after shutdown).
   */
  add(key: K, priority = 0): void {
    if (this.#shuttingDown) return
    if (this.#dirty.has(key)) {
      // Already waiting: a higher priority moves it up; being processed: it is queued again at the
      // highest priority it was added with since.
      const at = this.#waitingAt.get(key)
      if (at !== undefined) {
        if (priority > at.priority) this.#wait(key, priority)
      } else if (priority > (this.#requeueAt.get(key) ?? -Infinity)) this.#requeueAt.set(key, priority)
      return
    }
    this.#dirty.add(key)
    this.#hooks.add?.()
    // Being processed: `done` queues it again, so one worker at a time sees a key.
    if (this.#processing.has(key)) {
      this.#requeueAt.set(key, priority)
      return
    }
    this.#enqueue(key, priority)
  }

  #enqueue(key: K, priority: number): void {
    this.#readySince.set(key, this.#clock.now())
    const getter = this.#getters.shift()
    if (getter) {
      getter(this.#take(key))
      return
    }
    this.#wait(key, priority)
    this.#hooks.depth?.(this.#waitingAt.size)
  }

  /** Puts a key at the end of its priority's line (an earlier place it had becomes stale). */
  #wait(key: K, priority: number): void {
    let line = this.#lines.find((l) => l.priority === priority)
    if (line === undefined) {
      line = { priority, keys: [], head: 0 }
      this.#lines.push(line)
      this.#lines.sort((a, b) => b.priority - a.priority)
    }
    const seq = ++this.#seq
    line.keys.push({ key, seq })
    this.#waitingAt.set(key, { priority, seq })
  }

  /** Takes the oldest key of the highest priority waiting, skipping stale places. */
  #next(): K | undefined {
    for (const line of this.#lines) {
      while (line.head < line.keys.length) {
        const e = line.keys[line.head++] as { key: K; seq: number }
        const at = this.#waitingAt.get(e.key)
        if (at === undefined || at.seq !== e.seq) continue
        this.#waitingAt.delete(e.key)
        this.#compact(line)
        return e.key
      }
      line.keys = []
      line.head = 0
    }
    return undefined
  }

  /** Drops the taken head of a line once it is most of the array (amortised O(1) per take). */
  #compact(line: { keys: unknown[]; head: number }): void {
    if (line.head > 1024 && line.head * 2 > line.keys.length) {
      line.keys = line.keys.slice(line.head)
      line.head = 0
    }
  }

  #take(key: K): K {
    this.#dirty.delete(key)
    this.#processing.add(key)
    const now = this.#clock.now()
    this.#hooks.queueLatency?.((now - (this.#readySince.get(key) ?? now)) / 1000)
    this.#readySince.delete(key)
    this.#startedAt.set(key, now)
    return key
  }

  /**
   * Queues a key after `ms` milliseconds; while it waits, a sooner `addAfter` of the same key
   * moves it forward and a later one is ignored.
   */
  addAfter(key: K, ms: number): void {
    if (this.#shuttingDown) return
    if (ms <= 0) {
      this.add(key)
      return
    }
    const at = this.#clock.now() + ms
    const current = this.#waiting.get(key)
    if (current !== undefined && current <= at) return
    this.#waiting.set(key, at)
    if (at < this.#timerAt) this.#arm(at)
  }

  #arm(at: number): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer)
    this.#timerAt = at
    this.#timer = this.#clock.setTimeout(() => this.#fire(), at - this.#clock.now())
  }

  #fire(): void {
    this.#timer = undefined
    this.#timerAt = Infinity
    const now = this.#clock.now()
    let next = Infinity
    for (const [key, at] of this.#waiting) {
      if (at <= now) {
        this.#waiting.delete(key)
        this.add(key)
      } else if (at < next) next = at
    }
    if (next < Infinity) this.#arm(next)
  }

  /**
   * Queues a key after its backoff: `base · 2^failures` plus jitter, capped at the maximum, or the
   * delay of the shared bucket's next token when that is longer, and never less than `minDelayMs`.
   * Each call counts a failure until {@link WorkQueue.forget}.
   * @returns the chosen delay in milliseconds
   */
  addRateLimited(key: K, opts: RateLimitedOptions = {}): number {
    const failures = this.#failures.get(key) ?? 0
    this.#failures.set(key, failures + 1)
    const l = this.#limiter
    const delay = Math.max(backoffDelay(failures, { initialMs: l.baseMs, maxMs: l.maxMs, jitter: l.jitter }, this.#random), this.#bucket.reserve(), opts.minDelayMs ?? 0)
    if (this.#shuttingDown) return delay
    this.#hooks.retry?.()
    this.addAfter(key, delay)
    return delay
  }

  /** Clears a key's failure count (after a successful sync). */
  forget(key: K): void {
    this.#failures.delete(key)
  }

  /** How many rate-limited retries a key has had since it was last forgotten. */
  numRequeues(key: K): number {
    return this.#failures.get(key) ?? 0
  }

  /**
   * The next key for a worker, waiting until one is ready; `undefined` once the queue is shut
   * down. The worker must call {@link WorkQueue.done} with the key when it is finished.
   */
  get(): Promise<K | undefined> {
    if (this.#shuttingDown) return Promise.resolve(undefined)
    const key = this.#next()
    if (key !== undefined) {
      this.#hooks.depth?.(this.#waitingAt.size)
      return Promise.resolve(this.#take(key))
    }
    return new Promise((resolve) => this.#getters.push(resolve))
  }

  /** Marks a key's processing finished; a key added meanwhile is queued again. */
  done(key: K): void {
    if (!this.#processing.delete(key)) return
    const started = this.#startedAt.get(key)
    this.#startedAt.delete(key)
    if (started !== undefined) this.#hooks.workDuration?.((this.#clock.now() - started) / 1000)
    const priority = this.#requeueAt.get(key) ?? 0
    this.#requeueAt.delete(key)
    if (this.#dirty.has(key) && !this.#shuttingDown) this.#enqueue(key, priority)
    if (this.#processing.size === 0) {
      const drainers = this.#drainers
      this.#drainers = []
      for (const d of drainers) d()
    }
  }

  /**
   * Stops the queue: adds are ignored, waiting workers get `undefined`, delayed and queued keys
   * are dropped (a new leader or a restart lists everything again); keys in flight finish.
   */
  shutdown(): void {
    if (this.#shuttingDown) return
    this.#shuttingDown = true
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer)
    this.#timer = undefined
    this.#timerAt = Infinity
    this.#waiting.clear()
    this.#lines = []
    this.#waitingAt.clear()
    this.#requeueAt.clear()
    this.#dirty.clear()
    this.#readySince.clear()
    this.#hooks.depth?.(0)
    const getters = this.#getters
    this.#getters = []
    for (const g of getters) g(undefined)
  }

  /**
   * How long the keys in flight have been processed so far, in seconds: their sum and the longest
   * (client-go's `workqueue_unfinished_work_seconds` and
   * `workqueue_longest_running_processor_seconds`, which catch a worker stuck in a reconcile).
   */
  unfinishedWork(): { seconds: number; longestSeconds: number } {
    const now = this.#clock.now()
    let seconds = 0
    let longestSeconds = 0
    for (const started of this.#startedAt.values()) {
      const s = Math.max(0, now - started) / 1000
      seconds += s
      longestSeconds = Math.max(longestSeconds, s)
    }
    return { seconds, longestSeconds }
  }

  /** Resolves when no key is in flight (call after {@link WorkQueue.shutdown} to wait for workers). */
  drain(): Promise<void> {
    if (this.#processing.size === 0) return Promise.resolve()
    return new Promise((resolve) => this.#drainers.push(resolve))
  }
}
