/** Watch fan-out: the initial list or the history since a resourceVersion, then the store's events filtered per watcher, bookmarks, timeouts and 410 Gone (apiserver pkg/storage/cacher). */
import { StatusError, badRequest, internalError, expired } from '../errors.ts'
import { escapeFieldValue, parseFieldSelector, SelectorError } from '../../kube/labels.ts'
import { groupVersion, tableOf } from '../registry.ts'
import { StoredObject, type StoreEvent } from '../store.ts'
import { BookmarkGate, sendInitialEventsOf, validateListOptions } from '../list-watch.ts'
import type { ApiRequest, ResourceType, WatchEvent } from '../types.ts'
import type { WatchSink } from './reply.ts'
import { type WatchFilter, storedMatches, filterOf } from './filter.ts'
import { ServerState } from './state.ts'

/** An in-process watch: events carry objects (private copies, or the stored ones frozen when `shared`); a wrong request ends in one ERROR event. */
export function watchObjects(c: ServerState, req: ApiRequest, onEvent: (event: WatchEvent) => void, onClose: (() => void) | undefined, shared: boolean): () => void {
  try {
    const sink: WatchSink = { event: (type, json) => onEvent({ type, object: JSON.parse(json) }), close: () => onClose?.() }
    if (shared) sink.object = (type, object) => onEvent({ type, object })
    return watchRaw(c, req, sink)
  } catch (e) {
    const err = e instanceof StatusError ? e : internalError(String(e))
    onEvent({ type: 'ERROR', object: err.status })
    onClose?.()
    return () => {}
  }
}

/**
 * Starts a watch, delivering serialised events to `sink`. Throws a {@link StatusError} before
 * any event when the request itself is wrong (unknown resource, bad selector, bad resourceVersion).
 */
export function watchRaw(c: ServerState, req: ApiRequest, sink: WatchSink, opts: { forceExpire?: boolean } = {}): () => void {
  let type: ResourceType
  let filter: WatchFilter
  try {
    type = c.typeOf({ ...req, verb: 'watch', name: undefined })
    validateListOptions(req.query, true, c.watchList)
    filter = filterOf(type, req)
  } catch (e) {
    if (e instanceof SelectorError) throw badRequest(e.message)
    throw e
  }
  if (req.name) {
    const byName = parseFieldSelector(`metadata.name=${escapeFieldValue(req.name)}`)
    const fields = filter.fields
    filter = { ...filter, fields: { empty: false, fields: [...fields.fields, 'metadata.name'], matches: (f) => byName.matches(f) && fields.matches(f) } }
  }
  const table = tableOf(type)
  const rvParam = req.query.get('resourceVersion') ?? ''
  const bookmarks = req.query.get('allowWatchBookmarks') === 'true'
  // sendInitialEvents=false with resourceVersion unset or 0 starts from now, with no initial
  // events (apiserver `pkg/storage/cacher` `Watch`: "SendInitialEvents = false and
  // resourceVersion = 0 means that the request would like to start watching from Any").
  const sendInitialParam = sendInitialEventsOf(req.query)
  const sendInitial = sendInitialParam === true
  let stopped = false
  let unsubscribe: () => void = () => {}
  const timers: NodeJS.Timeout[] = []
  const stop = (): void => {
    stopped = true
    unsubscribe()
    for (const t of timers) clearTimeout(t)
  }
  const end = (): void => {
    if (stopped) return
    stop()
    sink.close()
  }
  const gv = groupVersion(type.group, type.version)
  const send = (type_: WatchEvent['type'], stored: StoredObject): void => {
    if (stopped) return
    if (sink.object && stored.isAt(gv)) sink.object(type_, stored.shared())
    else sink.event(type_, c.jsonFor(type, stored))
  }
  const bookmark = (annotations?: Record<string, string>): void => {
    if (stopped) return
    const meta: Record<string, unknown> = { resourceVersion: String(c.store.resourceVersion) }
    if (annotations) meta.annotations = annotations
    sink.event('BOOKMARK', JSON.stringify({ kind: type.kind, apiVersion: groupVersion(type.group, type.version), metadata: meta }))
  }
  let gate: BookmarkGate | undefined
  const deliver = (e: StoreEvent): void => {
    gate?.saw(e.rv)
    const now = storedMatches(filter, e.current)
    if (e.type === 'ADDED') {
      if (now) send('ADDED', e.current)
    } else if (e.type === 'DELETED') {
      if (now) send('DELETED', e.current)
    } else {
      const before = e.previous ? storedMatches(filter, e.previous) : now
      if (now && before) send('MODIFIED', e.current)
      else if (now) send('ADDED', e.current)
      else if (before) send('DELETED', e.current)
    }
  }
  let since = 0
  const fromNow = sendInitialParam === false && (rvParam === '' || rvParam === '0')
  const initial = !fromNow && (rvParam === '' || rvParam === '0' || sendInitial)
  if (fromNow) since = c.store.resourceVersion
  else if (!initial) {
    since = Number(rvParam)
    if (!Number.isInteger(since) || since < 0) throw badRequest(`invalid resource version "${rvParam}"`)
  }
  const history = initial || opts.forceExpire ? undefined : c.store.since(table, since)
  if (!initial && !history) {
    const err = expired(since, c.store.compactedResourceVersion + 1)
    sink.event('ERROR', JSON.stringify(err.status))
    // The stream ends right after the ERROR event, as the real server does.
    queueMicrotask(end)
    return stop
  }
  // Subscribe before replaying, and hold live events until the replay is out: a consumer that
  // writes while receiving the replay must still see its own write's event, after the replay.
  gate = new BookmarkGate(initial ? c.store.resourceVersion : since)
  let replaying = true
  const held: StoreEvent[] = []
  unsubscribe = c.store.subscribe(table, (e) => (replaying ? held.push(e) : deliver(e)), { freezes: sink.object !== undefined })
  if (initial) {
    for (const o of c.store.list(table, filter.namespace)) if (storedMatches(filter, o)) send('ADDED', o)
    if (sendInitial && bookmarks) bookmark({ 'k8s.io/initial-events-end': 'true' })
  } else {
    for (const e of history ?? []) deliver(e)
  }
  for (let i = 0; i < held.length; i++) deliver(held[i] as StoreEvent)
  replaying = false
  if (bookmarks) {
    const tick = (): void => {
      if (stopped) return
      if (gate?.due) bookmark()
      const t = setTimeout(tick, c.bookmarkIntervalMs)
      t.unref()
      timers.push(t)
    }
    const t = setTimeout(tick, c.bookmarkIntervalMs)
    t.unref()
    timers.push(t)
  }
  const timeout = Number(req.query.get('timeoutSeconds') ?? '0')
  if (timeout > 0) {
    const t = setTimeout(end, timeout * 1000)
    t.unref()
    timers.push(t)
  }
  return stop
}
