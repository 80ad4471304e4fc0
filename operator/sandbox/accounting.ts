/**
 * Request accounting: how many requests the sandbox served, by Kubernetes verb (get vs list vs
 * watch as the API server classifies them), by resource, namespace, field manager, user agent
 * and patch type, and a log of the last N requests. Benchmarks and the "zero writes when nothing
 * changed" tests read it in-process or at `GET /sandbox/v1/requests`.
 */

/** One served request. */
export interface RequestRecord {
  /** ISO time the request arrived. */
  time: string
  verb: string
  group: string
  resource: string
  subresource?: string
  namespace?: string
  name?: string
  /** `apply`, `merge`, `json` or `strategic` for patches. */
  patchType?: string
  fieldManager?: string
  /** A list's or watch's `labelSelector`, as sent. */
  labelSelector?: string
  /** A list's or watch's `fieldSelector`, as sent. */
  fieldSelector?: string
  userAgent?: string
  code: number
}

/** The counters; resource keys are `resource[.group][/subresource]` (`deployments.apps/status`). */
export interface RequestCounts {
  total: number
  byVerb: Record<string, number>
  byResource: Record<string, number>
  byNamespace: Record<string, number>
  byFieldManager: Record<string, number>
  byUserAgent: Record<string, number>
  byPatchType: Record<string, number>
  byCode: Record<string, number>
  /** `verb resource` pairs, e.g. `patch deployments.apps`. */
  byVerbResource: Record<string, number>
}

function bump(map: Record<string, number>, key: string | undefined): void {
  if (key === undefined || key === '') return
  map[key] = (map[key] ?? 0) + 1
}

/** The key of a resource in {@link RequestCounts.byResource}. */
export function resourceKey(group: string, resource: string, subresource?: string): string {
  const base = group === '' ? resource : `${resource}.${group}`
  return subresource ? `${base}/${subresource}` : base
}

/** Counters plus a ring buffer of the last `logSize` requests. */
export class Accounting {
  #counts: RequestCounts = Accounting.#empty()
  #log: RequestRecord[] = []
  #logSize: number

  constructor(logSize = 1000) {
    this.#logSize = Math.max(0, logSize)
  }

  static #empty(): RequestCounts {
    return { total: 0, byVerb: {}, byResource: {}, byNamespace: {}, byFieldManager: {}, byUserAgent: {}, byPatchType: {}, byCode: {}, byVerbResource: {} }
  }

  /** Records one request. */
  record(r: RequestRecord): void {
    const c = this.#counts
    c.total++
    bump(c.byVerb, r.verb)
    const rk = r.resource ? resourceKey(r.group, r.resource, r.subresource) : undefined
    bump(c.byResource, rk)
    if (rk) bump(c.byVerbResource, `${r.verb} ${rk}`)
    bump(c.byNamespace, r.namespace)
    bump(c.byFieldManager, r.fieldManager)
    bump(c.byUserAgent, r.userAgent)
    bump(c.byPatchType, r.patchType)
    bump(c.byCode, String(r.code))
    if (this.#logSize > 0) {
      this.#log.push(r)
      if (this.#log.length > this.#logSize * 2) this.#log = this.#log.slice(-this.#logSize)
    }
  }

  /** A snapshot of the counters. */
  counts(): RequestCounts {
    return structuredClone(this.#counts)
  }

  /** The last `n` requests (default: all retained), oldest first. */
  log(n?: number): RequestRecord[] {
    const keep = Math.min(n ?? this.#logSize, this.#logSize)
    return keep <= 0 ? [] : this.#log.slice(-keep)
  }

  /** Zeroes the counters and empties the log. */
  reset(): void {
    this.#counts = Accounting.#empty()
    this.#log = []
  }
}
