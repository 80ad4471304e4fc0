/**
 * The list and watch options of kube-apiserver: which are refused, which lists its watch cache
 * answers (in one piece, whatever `limit` says) and which go to etcd (paginated), and when a
 * watcher is sent a bookmark.
 */
import { badRequest, invalid } from './errors.ts'
import { forbiddenField, notSupported } from '../kube/builtin/field.ts'
import type { FieldCause } from './types.ts'

const NOT_OLDER_THAN = 'NotOlderThan'
const EXACT = 'Exact'

/** `true`, `1`, `t` … as Go's `strconv.ParseBool` (the query parameter conversion of apimachinery). */
function parseBool(v: string): boolean | undefined {
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(v)) return true
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(v)) return false
  return undefined
}

/** `sendInitialEvents` as given (`undefined` when absent). @throws StatusError 400 for a non-boolean */
export function sendInitialEventsOf(query: URLSearchParams): boolean | undefined {
  const raw = query.get('sendInitialEvents')
  if (raw === null) return undefined
  const v = parseBool(raw)
  if (v === undefined) throw badRequest(`sendInitialEvents: invalid value "${raw}": strconv.ParseBool: parsing "${raw}": invalid syntax`)
  return v
}

/**
 * apimachinery `pkg/apis/meta/internalversion/validation` `ValidateListOptions` (and
 * `validateWatchOptions` for a watch): a refused option is 422 `ListOptions.meta.k8s.io "" is
 * invalid: …`. `watchListEnabled`: the WatchList feature, on by default since Kubernetes 1.34 (off
 * before, where a watch-list is refused).
 */
export function validateListOptions(query: URLSearchParams, watch: boolean, watchListEnabled = true): void {
  const match = query.get('resourceVersionMatch') ?? ''
  const rv = query.get('resourceVersion') ?? ''
  const cont = query.get('continue') ?? ''
  const sendInitial = sendInitialEventsOf(query)
  const causes: FieldCause[] = []
  if (watch) {
    if (sendInitial !== undefined && match !== NOT_OLDER_THAN) causes.push(forbiddenField('resourceVersionMatch', `sendInitialEvents requires setting resourceVersionMatch to ${NOT_OLDER_THAN}`))
    if (sendInitial !== undefined && !watchListEnabled) causes.push(forbiddenField('sendInitialEvents', 'sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled'))
    if (match !== '') {
      if (sendInitial === undefined) causes.push(forbiddenField('resourceVersionMatch', 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'))
      if (match !== NOT_OLDER_THAN) causes.push(notSupported('resourceVersionMatch', `"${match}"`, [NOT_OLDER_THAN]))
      if (cont !== '') causes.push(forbiddenField('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'))
    }
  } else {
    if (match !== '') {
      if (rv === '') causes.push(forbiddenField('resourceVersionMatch', 'resourceVersionMatch is forbidden unless resourceVersion is provided'))
      if (cont !== '') causes.push(forbiddenField('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'))
      if (match !== EXACT && match !== NOT_OLDER_THAN) causes.push(notSupported('resourceVersionMatch', `"${match}"`, [EXACT, NOT_OLDER_THAN, '']))
      if (match === EXACT && rv === '0') causes.push(forbiddenField('resourceVersionMatch', 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
    }
    if (sendInitial !== undefined) causes.push(forbiddenField('sendInitialEvents', 'sendInitialEvents is forbidden for list'))
  }
  if (causes.length > 0) throw invalid('meta.k8s.io', 'ListOptions', '', causes)
}

/**
 * Whether a list is answered whole by the watch cache, its `limit` ignored: apiserver
 * `pkg/storage/cacher` `shouldDelegateList` sends to etcd, which paginates, a `continue`, a
 * `limit` with a resourceVersion other than `"0"` (a consistent read, `resourceVersion` unset,
 * included) and an `Exact` match; kubernetes `test/integration/apiserver/apiserver_test.go`
 * `testListOptionsCase`: "watch cache does not respect limit … limit is ignored if watch cache is
 * hit". (A consistent read without a limit may come from the cache on newer servers: whole
 * either way.)
 */
export function servedByWatchCache(query: URLSearchParams): boolean {
  const rv = query.get('resourceVersion') ?? ''
  if (rv === '') return false
  if ((query.get('continue') ?? '') !== '') return false
  const limit = Number(query.get('limit') ?? '0')
  if (limit > 0 && rv !== '0') return false
  const match = query.get('resourceVersionMatch') ?? ''
  return match === '' || match === NOT_OLDER_THAN
}

/** One page of a list ordered by (namespace, name). */
export interface Page<T> {
  items: readonly T[]
  /** The token of the next page, when there is one. */
  continue?: string
  remainingItemCount?: number
}

/**
 * Cuts a list ordered by (namespace, name) into the page a request asks for. The token is the key
 * of the last item served (later pages see later writes, not a snapshot: a deviation the
 * sandbox's README states). A list the watch cache answers ({@link servedByWatchCache}) is never
 * cut.
 */
export function pageOf<T extends { namespace: string; name: string }>(all: readonly T[], query: URLSearchParams, rv: string): Page<T> {
  let items: readonly T[] = all
  const cont = query.get('continue')
  if (cont) {
    let after: { ns?: unknown; name?: unknown } | undefined
    try {
      after = JSON.parse(Buffer.from(cont, 'base64url').toString('utf8')) as { ns?: unknown; name?: unknown }
    } catch {
      throw badRequest('continue key is not valid: illegal base64 data')
    }
    // Compare as the list is ordered (namespace, then name), not as joined strings.
    const ns = String(after?.ns ?? '')
    const name = String(after?.name ?? '')
    items = items.filter((o) => o.namespace > ns || (o.namespace === ns && o.name > name))
  }
  const limit = Number(query.get('limit') ?? '0')
  if (servedByWatchCache(query) || !(limit > 0) || items.length <= limit) return { items }
  const page = items.slice(0, limit)
  const last = page[page.length - 1] as T
  return { items: page, continue: Buffer.from(JSON.stringify({ ns: last.namespace, name: last.name, rv })).toString('base64url'), remainingItemCount: items.length - limit }
}

/**
 * When a watcher gets a periodic bookmark. The cacher sends a watcher only events with a
 * resourceVersion above the one it started from, bookmarks included (apiserver
 * `pkg/storage/cacher/cache_watcher.go` `process`); the watch cache's resourceVersion moves only
 * with the watched type's own writes (and etcd's progress notifications, every few minutes). So a
 * watch on a type nobody writes gets nothing at all, not a bookmark every minute.
 */
export class BookmarkGate {
  #from: number
  #typeRv: number

  /** @param from the resourceVersion the watch starts from (the latest one for a watch with initial events) */
  constructor(from: number) {
    this.#from = from
    this.#typeRv = from
  }

  /** A write to the watched type (whether or not it passes the watch's selectors). */
  saw(rv: number): void {
    if (rv > this.#typeRv) this.#typeRv = rv
  }

  /** Whether a bookmark is due: the type has moved past where the watch started. */
  get due(): boolean {
    return this.#typeRv > this.#from
  }
}
