/**
 * Event aggregation in the manner of client-go's EventRecorder and EventCorrelator, pure: it
 * decides whether an occurrence becomes a new core/v1 Event, a patch of the count of an existing
 * one, or nothing. The caller does the I/O.
 *
 * A reconcile that repeats (every resync, every retry of a failing apply) repeats its events; the
 * API server must not see one Event per repetition. An identical event (same object uid, type,
 * reason and message) is therefore emitted at most once per suppression window (10 minutes by
 * default): the occurrences in between are counted, and the next emission patches `count` and
 * `lastTimestamp` of the same Event. After the server's event TTL (1 hour by default, kube-apiserver's
 * `--event-ttl`) the old Event is gone, so a new one is created.
 *
 * Unlike client-go, events with the same reason but different messages are not merged into a
 * "(combined from similar events)" event: the operator's messages are few and distinct.
 */
import { hostname } from 'node:os'
import { rfc3339 } from './conditions.ts'

/** The object an event is about (core/v1 ObjectReference). */
export interface InvolvedObject {
  apiVersion: string
  kind: string
  name: string
  namespace?: string
  uid: string
  resourceVersion?: string
  fieldPath?: string
}

/** One occurrence to report. */
export interface EventSpec {
  involvedObject: InvolvedObject
  type: 'Normal' | 'Warning'
  /** CamelCase, e.g. `Created`, `OwnershipConflict`. */
  reason: string
  /** Human-readable; cut to 1,024 bytes. Callers pass names and causes, never values of the CR or of Secrets. */
  message: string
  /** What was done or failed (`Apply`, `Prune`), optional. */
  action?: string
}

/** A core/v1 Event as created on the API server. */
export interface CoreEvent {
  apiVersion: 'v1'
  kind: 'Event'
  metadata: { name: string; namespace: string }
  involvedObject: InvolvedObject
  reason: string
  message: string
  type: 'Normal' | 'Warning'
  count: number
  firstTimestamp: string
  lastTimestamp: string
  source: { component: string; host?: string }
  reportingComponent: string
  reportingInstance: string
  action?: string
}

/**
 * What the caller should do: create the Event; patch the existing one (a strategic-merge or
 * merge patch of `count` and `lastTimestamp`; if the server answers 404 — the Event expired —
 * create `event`, which carries the same totals); or nothing.
 */
export type EventAction =
  | { create: CoreEvent }
  | { patch: { namespace: string; name: string; count: number; lastTimestamp: string }; event: CoreEvent }
  | { suppressed: true; name: string; count: number }

/** Options of {@link EventAggregator}. */
export interface EventAggregatorOptions {
  /** `source.component` and `reportingComponent` (default `memcached-operator`). */
  component?: string
  /**
   * `source.host` and `reportingInstance`: which replica reported (default: the host name, which in
   * a pod is the pod's name, as client-go's recorders use it).
   */
  instance?: string
  /** An identical event is emitted at most once per this many milliseconds (default 10 minutes). */
  suppressForMs?: number
  /** After this long without an emission the Event is presumed expired and created anew (default 1 hour). */
  eventTtlMs?: number
  /** Distinct events remembered, least recently used dropped first (default 4,096, client-go's cache size). */
  maxEntries?: number
}

/** The largest message, in bytes of UTF-8. */
export const MAX_MESSAGE_BYTES = 1024

interface Entry {
  event: CoreEvent
  lastEmitted: number
  /** Occurrences since the last emission, not yet in `event.count`. */
  pending: number
}

/** `text` cut to at most `max` bytes of UTF-8 at a character boundary, ending in `...` when cut. */
export function truncateUtf8(text: string, max: number = MAX_MESSAGE_BYTES): string {
  const bytes = Buffer.from(text, 'utf8')
  if (bytes.length <= max) return text
  let end = Math.max(0, max - 3)
  // Back off continuation bytes (10xxxxxx) so that no character is split.
  while (end > 0 && ((bytes[end] as number) & 0xc0) === 0x80) end--
  return `${bytes.subarray(0, end).toString('utf8')}...`
}

/** Aggregates events; one instance per operator process. */
export class EventAggregator {
  #entries = new Map<string, Entry>()
  #component: string
  #instance: string
  #suppressFor: number
  #ttl: number
  #max: number
  #lastNanos = 0n

  /** @param opts identity of the reporter and the windows */
  constructor(opts: EventAggregatorOptions = {}) {
    this.#component = opts.component ?? 'memcached-operator'
    this.#instance = opts.instance ?? hostname()
    this.#suppressFor = opts.suppressForMs ?? 10 * 60_000
    this.#ttl = opts.eventTtlMs ?? 60 * 60_000
    this.#max = opts.maxEntries ?? 4096
  }

  /** How many distinct events are remembered. */
  get size(): number {
    return this.#entries.size
  }

  /**
   * Records one occurrence at `now` and says what to send. Messages are taken as given (cut to
   * {@link MAX_MESSAGE_BYTES}): callers must not put secret values into them.
   */
  record(spec: EventSpec, now: Date): EventAction {
    const message = truncateUtf8(spec.message)
    const o = spec.involvedObject
    const key = JSON.stringify([o.uid, o.apiVersion, o.kind, o.namespace ?? '', o.name, o.fieldPath ?? '', spec.type, spec.reason, message])
    const t = now.getTime()
    const entry = this.#entries.get(key)
    if (entry !== undefined) {
      this.#entries.delete(key)
      this.#entries.set(key, entry)
      const since = t - entry.lastEmitted
      if (since < this.#ttl) {
        if (since < this.#suppressFor) {
          entry.pending++
          return { suppressed: true, name: entry.event.metadata.name, count: entry.event.count + entry.pending }
        }
        const ts = rfc3339(now)
        entry.event = { ...entry.event, count: entry.event.count + entry.pending + 1, lastTimestamp: ts }
        entry.pending = 0
        entry.lastEmitted = t
        const { namespace, name } = entry.event.metadata
        return { patch: { namespace, name, count: entry.event.count, lastTimestamp: ts }, event: structuredClone(entry.event) }
      }
    }
    const ts = rfc3339(now)
    const event: CoreEvent = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: this.#eventName(o.name, t), namespace: o.namespace ?? 'default' },
      involvedObject: { ...o },
      reason: spec.reason,
      message,
      type: spec.type,
      count: 1,
      firstTimestamp: ts,
      lastTimestamp: ts,
      source: { component: this.#component, host: this.#instance },
      reportingComponent: this.#component,
      reportingInstance: this.#instance,
    }
    if (spec.action !== undefined) event.action = spec.action
    this.#entries.delete(key)
    this.#entries.set(key, { event, lastEmitted: t, pending: 0 })
    if (this.#entries.size > this.#max) this.#entries.delete(this.#entries.keys().next().value as string)
    return { create: structuredClone(event) }
  }

  /** Forgets the events of an object (it was deleted). Returns how many. */
  forgetObject(uid: string): number {
    let n = 0
    for (const [key, e] of this.#entries) {
      if (e.event.involvedObject.uid === uid) {
        this.#entries.delete(key)
        n++
      }
    }
    return n
  }

  /** Forgets one Event by name (its create failed): the next occurrence creates it again. */
  forgetEvent(name: string): void {
    for (const [key, e] of this.#entries) if (e.event.metadata.name === name) this.#entries.delete(key)
  }

  /**
   * `<object>.<hex nanoseconds>` as client-go names events, unique within this process even for
   * events in the same millisecond; the object part is cut so the name stays a DNS subdomain.
   */
  #eventName(object: string, ms: number): string {
    let nanos = BigInt(ms) * 1_000_000n
    if (nanos <= this.#lastNanos) nanos = this.#lastNanos + 1n
    this.#lastNanos = nanos
    const hex = nanos.toString(16)
    const head = object.slice(0, 253 - hex.length - 1).replace(/[.-]+$/, '')
    return `${head}.${hex}`
  }
}
