/**
 * The Events the simulated controllers write, as client-go's record.EventRecorder writes them
 * (k8s.io/client-go/tools/record/event.go, events_cache.go): core/v1 Events named
 * `<object>.<hex nanoseconds>`, `source.component` and `reportingComponent` the controller's name.
 * Like the recorder's EventCorrelator:
 * - a repeat of an Event (same object, type, reason, message) is not a new Event: the first one's
 *   `count` and `lastTimestamp` are patched (EventLogger);
 * - once an object has had 10 Events of one type and reason with different messages within
 *   10 minutes, the next ones fold into one Event whose message starts
 *   `(combined from similar events): ` (EventAggregator);
 * - the correlation caches are LRUs of 4,096 entries (maxLruCacheEntries): an Event they forget
 *   stays stored; a repeat of it is a new Event.
 * The server deletes Events an hour after their last write (`--event-ttl`, see event-ttl.ts); a
 * patch of one that is gone creates it anew, as the recorder does.
 */
import type { KubeObject } from '../types.ts'
import { Client, events, isNotFound } from './client.ts'
import { rfc3339 } from '../../kube/time.ts'

const lruSize = 4096
const aggregateMax = 10
const aggregateWindowMs = 10 * 60_000

interface Written {
  namespace: string
  name: string
  count: number
}

/** Inserts or refreshes `key` in an insertion-ordered map used as an LRU, forgetting the oldest beyond `max`. */
function touch<V>(lru: Map<string, V>, key: string, value: V, max: number): void {
  lru.delete(key)
  lru.set(key, value)
  while (lru.size > max) lru.delete(lru.keys().next().value as string)
}

/** The Events of all the simulated controllers, with their correlation caches. */
export class EventSink {
  #max: number
  /** Event key (source, object, type, reason, message) → the Event written for it. */
  #logged = new Map<string, Written>()
  /** Aggregate key (source, object, type, reason) → messages seen, time of the last one. */
  #similar = new Map<string, { messages: Set<string>; since: number }>()
  #inflight = new Set<Promise<void>>()
  /** Event key → its last write in flight */
  #chains = new Map<string, Promise<void>>()
  #stopped = false

  /** @param cacheSize the size of the correlation caches */
  constructor(cacheSize = lruSize) {
    this.#max = cacheSize
  }

  /** A recorder for one controller (`deployment-controller`, …) writing with that controller's client. */
  recorder(component: string, client: Client): EventRecorder {
    return new EventRecorder(this, component, client)
  }

  /** Records an Event about `obj` (best effort: written in the background, failures dropped). */
  record(client: Client, component: string, obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    if (this.#stopped) return
    const uid = obj.metadata.uid ?? ''
    const aggregateKey = `${component}\n${uid}\n${type}\n${reason}`
    const t = Date.now()
    let similar = this.#similar.get(aggregateKey)
    if (!similar || t - similar.since > aggregateWindowMs) similar = { messages: new Set(), since: t }
    similar.since = t
    similar.messages.add(message)
    // "do not grow our local key set any larger than max" (EventAggregate)
    if (similar.messages.size > aggregateMax) similar.messages.delete(similar.messages.values().next().value as string)
    touch(this.#similar, aggregateKey, similar, this.#max)
    let key = `${aggregateKey}\n${message}`
    if (similar.messages.size >= aggregateMax) {
      // EventAggregate: the aggregate Event's key is the aggregate key; its message the latest one.
      key = aggregateKey
      message = `(combined from similar events): ${message}`
    }
    // Writes of one key go in order, so that a repeat patches the Event its first write created.
    const before = this.#chains.get(key) ?? Promise.resolve()
    const tracked: Promise<void> = before.then(() => this.#write(client, component, key, obj, type, reason, message)).catch(() => undefined).finally(() => {
      this.#inflight.delete(tracked)
      if (this.#chains.get(key) === tracked) this.#chains.delete(key)
    })
    this.#chains.set(key, tracked)
    this.#inflight.add(tracked)
  }

  async #write(client: Client, component: string, key: string, obj: KubeObject, type: string, reason: string, message: string): Promise<void> {
    const namespace = obj.metadata.namespace ?? 'default'
    const time = rfc3339()
    const seen = this.#logged.get(key)
    if (seen) {
      seen.count++
      touch(this.#logged, key, seen, this.#max)
      try {
        await client.mergePatch(events, seen.namespace, seen.name, { count: seen.count, lastTimestamp: time, message })
        return
      } catch (err) {
        if (!isNotFound(err)) throw err
        // Gone (expired, deleted): write it anew, as the recorder does after a failed patch.
      }
    }
    const name = `${obj.metadata.name ?? ''}.${(BigInt(Date.now()) * 1_000_000n + BigInt(Math.floor(Math.random() * 1_000_000))).toString(16)}`
    const entry: Written = { namespace, name, count: 1 }
    const apiVersion = obj.apiVersion ?? 'v1'
    const ev = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace },
      involvedObject: { kind: obj.kind, namespace, name: obj.metadata.name ?? '', uid: obj.metadata.uid ?? '', apiVersion, resourceVersion: obj.metadata.resourceVersion ?? '' },
      reason,
      message,
      source: { component },
      firstTimestamp: time,
      lastTimestamp: time,
      count: 1,
      type,
      eventTime: null,
      reportingComponent: component,
      reportingInstance: '',
    } as unknown as KubeObject
    touch(this.#logged, key, entry, this.#max)
    await client.create(events, namespace, ev)
  }

  /** Stops recording and waits for the writes in flight. */
  async stop(): Promise<void> {
    this.#stopped = true
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight])
  }
}

/** One controller's view of the {@link EventSink}, as `record.EventRecorder`. */
export class EventRecorder {
  #sink: EventSink
  #client: Client
  readonly component: string

  constructor(sink: EventSink, component: string, client: Client) {
    this.#sink = sink
    this.component = component
    this.#client = client
  }

  /** `recorder.Event(obj, type, reason, message)` */
  event(obj: KubeObject, type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.#sink.record(this.#client, this.component, obj, type, reason, message)
  }
}
