/**
 * Fault injection for HTTP requests (never for the in-process controllers): random 500/503
 * errors, optimistic-lock conflicts, throttling with `Retry-After`, added latency, periodic
 * dropping of watch connections, 410 on watch resume, and pausing the whole server.
 *
 * Settings, as a string (`--faults`) or as JSON (`PUT /sandbox/v1/faults`, keys either in the
 * kebab-case below or camelCase, e.g. `errorRate`):
 *
 * | key | meaning |
 * |---|---|
 * | `error-rate` | probability of an injected 500 InternalError or 503 ServiceUnavailable (half each) |
 * | `conflict-rate` | probability of a 409 Conflict on writes (create, update, patch, delete) |
 * | `throttle-rate` | probability of a 429 TooManyRequests with `Retry-After` |
 * | `timeout-rate` | probability that a write is carried out and then answered 504 Timeout |
 * | `retry-after-s` | the `Retry-After` seconds of injected 429s (default 1) |
 * | `latency-ms` | delay added before every matching request |
 * | `watch-drop-s` | every N seconds, open watch connections are cut (socket destroyed) |
 * | `expire-on-resume` | a watch with a non-zero `resourceVersion` gets a 410 Expired ERROR event |
 * | `verbs` | restrict the faults to these verbs, `|`-separated (`patch|update`) |
 * | `resources` | restrict to these resources, `|`-separated; `deployments`, `deployments.apps` or `deployments/status` |
 * | `namespaces` | restrict to these namespaces, `|`-separated |
 * | `users` | restrict to requests of these users (after impersonation), `|`-separated |
 * | `paused` | `true`: every request waits until `paused` is set back to false |
 * | `seed` | seed of the deterministic random generator (default 1); setting faults re-seeds it |
 *
 * A `PUT` replaces all settings (keys left out take their defaults); `GET` returns them in camelCase.
 */
import { serviceUnavailable, internalError, conflict, tooManyRequests, timeout, type StatusError } from './errors.ts'
import { qualifiedResource } from './errors.ts'

/** Fault settings; every field optional (off). */
export interface FaultSpec {
  errorRate?: number
  conflictRate?: number
  throttleRate?: number
  timeoutRate?: number
  retryAfterS?: number
  latencyMs?: number
  watchDropS?: number
  expireOnResume?: boolean
  verbs?: string[]
  resources?: string[]
  namespaces?: string[]
  users?: string[]
  paused?: boolean
  seed?: number
}

/** What a request is, for matching the `verbs`/`resources`/`namespaces`/`users` restrictions. */
export interface FaultTarget {
  verb: string
  group: string
  resource: string
  subresource?: string | undefined
  namespace?: string | undefined
  name?: string | undefined
  /** The requesting user's name (HTTP requests). */
  user?: string | undefined
}

const numberKeys = ['errorRate', 'conflictRate', 'throttleRate', 'timeoutRate', 'retryAfterS', 'latencyMs', 'watchDropS', 'seed'] as const
const boolKeys = ['expireOnResume', 'paused'] as const
const listKeys = ['verbs', 'resources', 'namespaces', 'users'] as const
const rateKeys = new Set(['errorRate', 'conflictRate', 'throttleRate', 'timeoutRate'])

function camel(key: string): string {
  return key.trim().replace(/[-_]([a-z])/g, (_, c: string) => c.toUpperCase())
}

/** Thrown for an unknown key or a bad value. */
export class FaultSpecError extends Error {
  override name = 'FaultSpecError'
}

/**
 * Parses fault settings from the `key=value,…` string or from a JSON object.
 * @throws FaultSpecError on unknown keys or invalid values
 */
export function parseFaults(input: string | Record<string, unknown> | FaultSpec | undefined): FaultSpec {
  if (input === undefined) return {}
  const entries: [string, unknown][] =
    typeof input === 'string'
      ? input
          .split(',')
          .map((p) => p.trim())
          .filter((p) => p !== '')
          .map((p) => {
            const i = p.indexOf('=')
            if (i < 0) throw new FaultSpecError(`fault setting ${JSON.stringify(p)} is not key=value`)
            return [p.slice(0, i), p.slice(i + 1).trim()]
          })
      : Object.entries(input)
  const spec: FaultSpec = {}
  for (const [rawKey, value] of entries) {
    const key = camel(rawKey)
    if ((numberKeys as readonly string[]).includes(key)) {
      const n = typeof value === 'number' ? value : typeof value === 'string' && value !== '' ? Number(value) : NaN
      if (!Number.isFinite(n) || n < 0) throw new FaultSpecError(`fault setting ${rawKey} must be a non-negative number, got ${JSON.stringify(value)}`)
      if (rateKeys.has(key) && n > 1) throw new FaultSpecError(`fault setting ${rawKey} is a probability between 0 and 1, got ${n}`)
      ;(spec as Record<string, unknown>)[key] = n
    } else if ((boolKeys as readonly string[]).includes(key)) {
      if (value === true || value === 'true') (spec as Record<string, unknown>)[key] = true
      else if (value === false || value === 'false') (spec as Record<string, unknown>)[key] = false
      else throw new FaultSpecError(`fault setting ${rawKey} must be true or false, got ${JSON.stringify(value)}`)
    } else if ((listKeys as readonly string[]).includes(key)) {
      const list = Array.isArray(value) ? value.map(String) : typeof value === 'string' ? value.split('|') : undefined
      if (!list) throw new FaultSpecError(`fault setting ${rawKey} must be a list or a |-separated string`)
      ;(spec as Record<string, unknown>)[key] = list.map((v) => v.trim()).filter((v) => v !== '')
    } else {
      throw new FaultSpecError(`unknown fault setting ${JSON.stringify(rawKey)}`)
    }
  }
  return spec
}

/** mulberry32: a tiny seedable generator, so a test's fault sequence is reproducible. */
export function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const writeVerbs = new Set(['create', 'update', 'patch', 'delete', 'deletecollection'])

/** The live fault settings of a sandbox. */
export class Faults {
  #spec: FaultSpec = {}
  #random: () => number = rng(1)
  #waiters: (() => void)[] = []
  #dropTimer: NodeJS.Timeout | undefined
  #dropListeners = new Set<() => void>()

  constructor(initial?: FaultSpec | string) {
    this.set(initial ?? {})
  }

  /** Replaces all settings. @throws FaultSpecError */
  set(input: FaultSpec | string | Record<string, unknown>): FaultSpec {
    const spec = parseFaults(input)
    this.#spec = spec
    this.#random = rng(spec.seed ?? 1)
    if (!spec.paused) {
      const waiters = this.#waiters
      this.#waiters = []
      for (const w of waiters) w()
    }
    if (this.#dropTimer) clearInterval(this.#dropTimer)
    this.#dropTimer = undefined
    if (spec.watchDropS && spec.watchDropS > 0) {
      this.#dropTimer = setInterval(() => {
        for (const fn of [...this.#dropListeners]) fn()
      }, spec.watchDropS * 1000)
      this.#dropTimer.unref()
    }
    return this.get()
  }

  /** The current settings (a copy). */
  get(): FaultSpec {
    return structuredClone(this.#spec)
  }

  /** Whether requests must currently wait. */
  get paused(): boolean {
    return this.#spec.paused === true
  }

  /** Resolves when the server is not paused. */
  whenUnpaused(): Promise<void> {
    if (!this.paused) return Promise.resolve()
    return new Promise((resolve) => this.#waiters.push(resolve))
  }

  /** Whether the restrictions (`verbs`, `resources`, `namespaces`, `users`) select this request. */
  matches(t: FaultTarget): boolean {
    const s = this.#spec
    if (s.verbs && s.verbs.length > 0 && !s.verbs.includes(t.verb)) return false
    if (s.namespaces && s.namespaces.length > 0 && !s.namespaces.includes(t.namespace ?? '')) return false
    if (s.users && s.users.length > 0 && !s.users.includes(t.user ?? '')) return false
    if (s.resources && s.resources.length > 0) {
      const q = qualifiedResource(t.group, t.resource)
      const names = [t.resource, q]
      if (t.subresource) names.push(`${t.resource}/${t.subresource}`, `${q}/${t.subresource}`)
      if (!s.resources.some((r) => names.includes(r))) return false
    }
    return true
  }

  /** Added latency for a request, in milliseconds. */
  latencyFor(t: FaultTarget): number {
    const ms = this.#spec.latencyMs ?? 0
    return ms > 0 && this.matches(t) ? ms : 0
  }

  /**
   * The injected error for this request, if the dice say so: an error instead of the request, or
   * (`afterWrite`) an answer that replaces a write's own once it is carried out.
   */
  errorFor(t: FaultTarget): (StatusError & { afterWrite?: true }) | undefined {
    const s = this.#spec
    const errorRate = s.errorRate ?? 0
    const conflictRate = s.conflictRate ?? 0
    const throttleRate = s.throttleRate ?? 0
    const timeoutRate = s.timeoutRate ?? 0
    if (errorRate + conflictRate + throttleRate + timeoutRate <= 0 || !this.matches(t)) return undefined
    const r = this.#random()
    if (r < errorRate) return this.#random() < 0.5 ? internalError('injected fault') : serviceUnavailable()
    if (r < errorRate + conflictRate) {
      // A conflict only makes sense for a write; reads pass.
      return writeVerbs.has(t.verb) ? conflict(t.group, t.resource, t.name ?? '') : undefined
    }
    if (r < errorRate + conflictRate + throttleRate) return tooManyRequests(s.retryAfterS ?? 1)
    // A write that outlives its deadline: the API server answers 504 while the write goes on and
    // may be stored (apiserver endpoints/handlers/rest.go finishRequest). Here it always is.
    if (r < errorRate + conflictRate + throttleRate + timeoutRate && writeVerbs.has(t.verb)) return Object.assign(timeout(), { afterWrite: true as const })
    return undefined
  }

  /** Whether a watch resuming from a resourceVersion must be answered 410 Expired. */
  expireOnResume(t: FaultTarget): boolean {
    return this.#spec.expireOnResume === true && this.matches(t)
  }

  /** Registers a function called every `watch-drop-s` seconds; returns its unregistration. */
  onWatchDrop(fn: () => void): () => void {
    this.#dropListeners.add(fn)
    return () => {
      this.#dropListeners.delete(fn)
    }
  }

  /** Stops timers and releases paused requests (server shutdown). */
  close(): void {
    if (this.#dropTimer) clearInterval(this.#dropTimer)
    this.#dropTimer = undefined
    const waiters = this.#waiters
    this.#waiters = []
    for (const w of waiters) w()
  }
}
