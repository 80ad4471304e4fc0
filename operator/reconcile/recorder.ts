/**
 * Writes the events the reconciler records, aggregated by {@link EventAggregator}: the first
 * occurrence creates an Event, repeats patch its count, resyncs within the suppression window
 * send nothing. Writing an event never fails a reconcile; a failure is logged.
 */
import type { Logger } from 'pino'
import { API_VERSION, KIND, type Memcached } from '../api/memcached.ts'
import { isNotFound, type KubeClient } from '../controller/client.ts'
import type { EventAggregator } from './events.ts'

/** Records events about a Memcached. */
export interface EventRecorder {
  /** `message` carries names and causes only, never values of the spec or of Secrets. */
  record(cr: Memcached, type: 'Normal' | 'Warning', reason: string, message: string, action?: string): Promise<void>
}

/** An {@link EventRecorder} that writes core/v1 Events through the API. */
export class ApiEventRecorder implements EventRecorder {
  #client: KubeClient
  #aggregator: EventAggregator
  #log: Logger
  #now: () => Date

  constructor(client: KubeClient, aggregator: EventAggregator, log: Logger, now: () => Date = () => new Date()) {
    this.#client = client
    this.#aggregator = aggregator
    this.#log = log
    this.#now = now
  }

  async record(cr: Memcached, type: 'Normal' | 'Warning', reason: string, message: string, action?: string): Promise<void> {
    const involvedObject = {
      apiVersion: API_VERSION,
      kind: KIND,
      name: cr.metadata.name,
      namespace: cr.metadata.namespace ?? 'default',
      uid: cr.metadata.uid ?? '',
      ...(cr.metadata.resourceVersion ? { resourceVersion: cr.metadata.resourceVersion } : {}),
    }
    const act = this.#aggregator.record({ involvedObject, type, reason, message, ...(action ? { action } : {}) }, this.#now())
    try {
      if ('create' in act) await this.#client.create(act.create)
      else if ('patch' in act) {
        try {
          await this.#client.patch({ apiVersion: 'v1', kind: 'Event', namespace: act.patch.namespace, name: act.patch.name }, { count: act.patch.count, lastTimestamp: act.patch.lastTimestamp }, { type: 'merge' })
        } catch (err) {
          // The Event expired on the server: create it again with the totals.
          if (!isNotFound(err)) throw err
          await this.#client.create(act.event)
        }
      }
    } catch (err) {
      this.#log.warn({ reason, err: err instanceof Error ? err.message : String(err) }, 'event not written')
    }
  }
}
