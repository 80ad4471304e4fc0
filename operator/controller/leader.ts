/**
 * Leader election on a `coordination.k8s.io/v1` Lease, as client-go's `leaderelection` does it:
 * a candidate takes the Lease when it is free or when its record has not changed for the
 * record's `leaseDurationSeconds` (judged by the candidate's own clock from the moment it first
 * saw that record, so clock skew between nodes does not matter); writes use the Lease's
 * resourceVersion, so two candidates never both win. The leader renews every retry period with
 * one optimistic update of the Lease it last saw (a GET only after a conflict), and every
 * request is aborted when the renew deadline passes, as client-go's context does. The leader
 * stops leading when its last successful renewal is older than the renew deadline — by a timer,
 * whatever the network does — which is before any follower may take over (the lease duration).
 * Releasing empties the holder and shortens the duration to 1 s so that a follower takes over at
 * its next try.
 */
import { hostname } from 'node:os'
import { randomUUID } from 'node:crypto'
import { realClock, type Clock, type TimerHandle } from './clock.ts'
import { isAlreadyExists, isConflict, isNotFound, type KubeClient, type KubeObject } from './client.ts'

/** The fields of a Lease's spec that leader election uses. */
export interface LeaseSpec {
  holderIdentity?: string
  leaseDurationSeconds?: number
  acquireTime?: string
  renewTime?: string
  leaseTransitions?: number
}

/** A Lease object. */
export interface Lease extends KubeObject {
  spec?: LeaseSpec
}

/** Options of {@link LeaderElector}. */
export interface LeaderElectorOptions {
  client: KubeClient
  /** Namespace of the Lease. */
  namespace: string
  /** Name of the Lease (e.g. `memcached-operator-leader`). */
  name: string
  /** This candidate's identity (default `<hostname>_<uuid>`). */
  identity?: string
  /** How long a record stays valid without renewal (default 15 s; stored in whole seconds). */
  leaseDurationMs?: number
  /** The leader gives up when it could not renew for this long (default 10 s; less than the lease duration). */
  renewDeadlineMs?: number
  /** Pause between tries (default 2 s; followers add up to 120% jitter, as client-go). */
  retryPeriodMs?: number
  /** Called once when this candidate becomes the leader. */
  onStartedLeading?: () => void
  /** Called once when leadership is lost (not on stop or release); the caller should stop its work, usually by exiting. */
  onStoppedLeading?: () => void
  /** Called when the observed holder changes (including to this candidate). */
  onNewLeader?: (identity: string) => void
  /** Told about failed requests (they are retried). */
  onError?: (err: Error) => void
  /** Bound of the release request on shutdown (default 5 s). */
  releaseTimeoutMs?: number
  clock?: Clock
  random?: () => number
}

/** `YYYY-MM-DDTHH:MM:SS.ffffffZ`, the MicroTime format of Lease times. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')
}

/** The default identity: `<hostname>_<uuid>`. */
export function defaultIdentity(): string {
  return `${hostname()}_${randomUUID()}`
}

/** One candidate in a leader election. */
export class LeaderElector {
  /** This candidate's identity (the Lease's holderIdentity while it leads). */
  readonly identity: string
  #opts: LeaderElectorOptions
  #clock: Clock
  #random: () => number
  #leaseDurationMs: number
  #renewDeadlineMs: number
  #retryPeriodMs: number
  #observedRecord = ''
  #observedHolder: string | undefined
  #observedTime = 0
  #observedLease: Lease | undefined
  #leading = false
  /** When the last successful acquire or renewal was sent: no follower can take over before this plus the lease duration. */
  #renewedAt = 0
  #started = false
  #stopped = false
  #timer: TimerHandle | undefined
  #deadlineTimer: TimerHandle | undefined
  #attempt: AbortController | undefined
  #running: Promise<void> | undefined
  #lastError: Error | undefined
  /** Elapsed time: deadlines, the step-down and a record's validity never follow a stepped wall clock (client-go measures them with Go's monotonic reading). */
  #elapsed: () => number

  constructor(opts: LeaderElectorOptions) {
    this.#opts = opts
    this.identity = opts.identity ?? defaultIdentity()
    this.#clock = opts.clock ?? realClock
    this.#random = opts.random ?? Math.random
    const clock = this.#clock
    this.#elapsed = clock.monotonic ? () => clock.monotonic!() : () => clock.now()
    this.#leaseDurationMs = opts.leaseDurationMs ?? 15_000
    this.#renewDeadlineMs = opts.renewDeadlineMs ?? 10_000
    this.#retryPeriodMs = opts.retryPeriodMs ?? 2_000
    if (this.#renewDeadlineMs >= this.#leaseDurationMs) throw new Error('leader election: renewDeadline must be less than leaseDuration')
    if (this.#retryPeriodMs >= this.#renewDeadlineMs) throw new Error('leader election: retryPeriod must be less than renewDeadline')
  }

  /**
   * Whether this candidate currently leads: it won, and its last renewal is younger than the renew
   * deadline. Asking after the deadline ends the term there and then (and reports the loss, unless
   * stopped), even if the step-down timer has not fired yet.
   */
  isLeader(): boolean {
    if (this.#leading && !this.#holds()) {
      if (this.#stopped) this.#endTerm()
      else this.#lose()
    }
    return this.#leading
  }

  #holds(): boolean {
    return this.#leading && this.#elapsed() - this.#renewedAt < this.#renewDeadlineMs
  }

  /** The holder last seen in the Lease (`''` when released), if any was seen. */
  leader(): string | undefined {
    return this.#observedHolder
  }

  /** Starts trying to acquire, then renewing (idempotent). */
  start(): void {
    if (this.#started || this.#stopped) return
    this.#started = true
    this.#schedule(0)
  }

  /** Stops trying and renewing without touching the Lease; aborts and waits for a request in flight. */
  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer)
    this.#timer = undefined
    // Without renewals the term lapses by the clock (isLeader); stopping is not a loss to report.
    if (this.#deadlineTimer !== undefined) this.#clock.clearTimeout(this.#deadlineTimer)
    this.#deadlineTimer = undefined
    this.#attempt?.abort()
    await this.#running
  }

  /**
   * Stops, and if this candidate leads, hands the Lease back (empty holder, 1 s duration) so a
   * follower takes over at its next try instead of after the lease duration. One update of the
   * Lease last seen (a GET only after a conflict), bounded by the release timeout.
   * @returns whether the Lease was released
   */
  async release(): Promise<boolean> {
    await this.stop()
    const leading = this.#holds()
    this.#endTerm()
    if (!leading) return false
    const signal = AbortSignal.timeout(this.#opts.releaseTimeoutMs ?? 5_000)
    const client = this.#opts.client
    const now = microTime(this.#clock.now())
    const released = (lease: Lease): Lease => ({ ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now } })
    try {
      let lease = this.#observedLease ?? (await client.get<Lease>(this.#ref(), { signal }))
      try {
        if (lease.spec?.holderIdentity !== this.identity) return false
        await client.replace<Lease>(released(lease), { signal })
      } catch (e) {
        if (!isConflict(e)) throw e
        lease = await client.get<Lease>(this.#ref(), { signal })
        if (lease.spec?.holderIdentity !== this.identity) return false
        await client.replace<Lease>(released(lease), { signal })
      }
      return true
    } catch (e) {
      this.#report(e)
      return false
    }
  }

  #ref(): { apiVersion: string; kind: string; namespace: string; name: string } {
    return { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', namespace: this.#opts.namespace, name: this.#opts.name }
  }

  #report(err: unknown): void {
    try {
      this.#opts.onError?.(err instanceof Error ? err : new Error(String(err)))
    } catch {
      // A failing reporter must not break the election.
    }
  }

  #schedule(ms: number): void {
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined
      this.#running = this.#tick()
    }, ms)
  }

  /** (Re)arms the step-down timer: it fires when the last renewal becomes older than the renew deadline. */
  #armDeadline(): void {
    if (this.#deadlineTimer !== undefined) this.#clock.clearTimeout(this.#deadlineTimer)
    this.#deadlineTimer = this.#clock.setTimeout(() => {
      this.#deadlineTimer = undefined
      if (!this.#leading) return
      // A timer may fire a fraction of a millisecond before the monotonic deadline: wait again.
      if (this.#holds()) this.#armDeadline()
      else this.#lose()
    }, this.#renewedAt + this.#renewDeadlineMs - this.#elapsed())
  }

  #endTerm(): void {
    this.#leading = false
    if (this.#deadlineTimer !== undefined) this.#clock.clearTimeout(this.#deadlineTimer)
    this.#deadlineTimer = undefined
  }

  /** The renew deadline passed: stop leading at once, abort the renewal in flight, tell the owner. */
  #lose(): void {
    this.#endTerm()
    this.#stopped = true
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer)
    this.#timer = undefined
    this.#attempt?.abort()
    this.#call(this.#opts.onStoppedLeading)
  }

  async #tick(): Promise<void> {
    if (this.#stopped) return
    const sentAt = this.#elapsed()
    // A leader's requests end when its renew deadline does; a follower's after one renew deadline.
    const attempt = new AbortController()
    this.#attempt = attempt
    const bound = this.#clock.setTimeout(() => attempt.abort(), this.#leading ? this.#renewedAt + this.#renewDeadlineMs - sentAt : this.#renewDeadlineMs)
    let ok = false
    try {
      ok = await this.#tryAcquireOrRenew(attempt.signal)
      this.#lastError = undefined
    } catch (e) {
      this.#lastError = e instanceof Error ? e : new Error(String(e))
      this.#report(e)
    } finally {
      this.#clock.clearTimeout(bound)
      if (this.#attempt === attempt) this.#attempt = undefined
    }
    if (this.#stopped) return
    if (this.#leading) {
      if (ok && !attempt.signal.aborted) {
        this.#renewedAt = sentAt
        this.#armDeadline()
      } else if (!this.#holds()) {
        this.#lose()
        return
      }
      this.#schedule(this.#retryPeriodMs)
      return
    }
    if (ok) {
      this.#leading = true
      this.#renewedAt = sentAt
      this.#armDeadline()
      this.#call(this.#opts.onStartedLeading)
      this.#schedule(this.#retryPeriodMs)
      return
    }
    this.#schedule(this.#retryPeriodMs * (1 + 1.2 * this.#random()))
  }

  #call(fn: (() => void) | undefined): void {
    try {
      fn?.()
    } catch (e) {
      this.#report(e)
    }
  }

  #observe(spec: LeaseSpec): void {
    const record = JSON.stringify(spec)
    if (record === this.#observedRecord) return
    this.#observedRecord = record
    this.#observedTime = this.#elapsed()
    const holder = spec.holderIdentity ?? ''
    if (holder !== this.#observedHolder) {
      this.#observedHolder = holder
      if (holder !== '') {
        const fn = this.#opts.onNewLeader
        this.#call(fn && (() => fn(holder)))
      }
    }
  }

  /** One try: create the Lease, take it over, or renew it. @returns whether this candidate holds it now */
  async #tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
    const client = this.#opts.client
    const nowMs = this.#elapsed()
    const now = microTime(this.#clock.now())
    const durationSeconds = Math.max(1, Math.ceil(this.#leaseDurationMs / 1000))
    // The leader's fast path, as client-go's: update the Lease it last wrote, assuming nobody else
    // did; any failure falls back to reading it.
    const mine = this.#observedLease
    if (this.#leading && mine?.spec?.holderIdentity === this.identity) {
      const spec: LeaseSpec = { ...mine.spec, leaseDurationSeconds: durationSeconds, renewTime: now }
      try {
        this.#observedLease = await client.replace<Lease>({ ...mine, spec }, { signal })
        this.#observe(spec)
        return true
      } catch (e) {
        if (signal.aborted) throw e
        if (!isConflict(e)) this.#report(e)
      }
    }
    let lease: Lease
    try {
      lease = await client.get<Lease>(this.#ref(), { signal })
    } catch (e) {
      if (!isNotFound(e)) throw e
      const spec: LeaseSpec = { holderIdentity: this.identity, leaseDurationSeconds: durationSeconds, acquireTime: now, renewTime: now, leaseTransitions: 0 }
      const fresh: Lease = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: this.#opts.name, namespace: this.#opts.namespace }, spec }
      try {
        this.#observedLease = await client.create<Lease>(fresh, { signal })
      } catch (err) {
        if (isAlreadyExists(err)) return false
        throw err
      }
      this.#observe(spec)
      return true
    }
    this.#observedLease = lease
    const old = lease.spec ?? {}
    this.#observe(old)
    const holder = old.holderIdentity ?? ''
    const validMs = (old.leaseDurationSeconds ?? 0) * 1000
    if (holder !== '' && holder !== this.identity && this.#observedTime + validMs > nowMs) return false
    const spec: LeaseSpec =
      holder === this.identity
        ? { ...old, holderIdentity: this.identity, leaseDurationSeconds: durationSeconds, renewTime: now }
        : { ...old, holderIdentity: this.identity, leaseDurationSeconds: durationSeconds, acquireTime: now, renewTime: now, leaseTransitions: (old.leaseTransitions ?? 0) + 1 }
    try {
      this.#observedLease = await client.replace<Lease>({ ...lease, spec }, { signal })
    } catch (e) {
      // Someone else wrote the Lease since our read: they won this round.
      if (isConflict(e)) return false
      throw e
    }
    this.#observe(spec)
    return true
  }

  /** Why the last try to acquire or renew failed; undefined when it got an answer it could act on. */
  get lastError(): Error | undefined {
    return this.#lastError
  }

  /** The Lease as last seen or written by this candidate (for diagnostics). */
  get lease(): Lease | undefined {
    return this.#observedLease
  }
}
