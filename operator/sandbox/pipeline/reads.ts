/** Reads: get, list (paged, filtered), Tables for kubectl, and pods/log. */
import { isObject } from '../../kube/json.ts'
import { badRequest } from '../errors.ts'
import { negotiateOutput } from '../negotiation.ts'
import { groupVersion, tableOf } from '../registry.ts'
import { pageOf, validateListOptions } from '../list-watch.ts'
import type { ApiRequest, KubeObject, ResourceType } from '../types.ts'
import type { Reply } from './reply.ts'
import { storedMatches, filterOf } from './filter.ts'
import { type TableRenderer, ServerState } from './state.ts'

function wantsTable(c: ServerState, req: ApiRequest): boolean {
  return c.table !== undefined && negotiateOutput(req.accept)?.kind === 'Table'
}

function tableReply(c: ServerState, type: ResourceType, req: ApiRequest, objects: KubeObject[], cont?: string): Reply {
  const includeObject = (req.query.get('includeObject') ?? 'Metadata') as 'None' | 'Metadata' | 'Object'
  const opts: Parameters<TableRenderer>[2] = { includeObject, resourceVersion: String(c.store.resourceVersion) }
  if (cont) opts.continue = cont
  return { status: 200, body: c.table?.(type, objects, opts), headers: { 'Content-Type': 'application/json;as=Table;v=v1;g=meta.k8s.io' } }
}

/** For a watch that asked for Tables: turns each event's object into a one-row Table. */
export function tableRendererFor(c: ServerState, req: ApiRequest): ((json: string) => string) | undefined {
  const render = c.table
  const type = c.registry.lookup(req.group, req.version, req.resource)
  if (!render || !type) return undefined
  const includeObject = (req.query.get('includeObject') ?? 'Metadata') as 'None' | 'Metadata' | 'Object'
  return (json) => JSON.stringify(render(type, [JSON.parse(json) as KubeObject], { includeObject, resourceVersion: String(c.store.resourceVersion) }))
}

/**
 * `pods/<name>/log`: simulated containers write nothing, so a running container's log is empty;
 * the container must be named when there are several, and must have started.
 */
export function podLog(c: ServerState, type: ResourceType, req: ApiRequest): Reply {
  const pod = c.mustLive(type, req).obj
  const name = pod.metadata.name ?? ''
  const spec = isObject(pod.spec) ? pod.spec : {}
  const names = (Array.isArray(spec.containers) ? spec.containers : []).map((c) => (isObject(c) ? String(c.name ?? '') : ''))
  const container = req.query.get('container') ?? (names.length === 1 ? names[0] : undefined)
  if (container === undefined) throw badRequest(`a container name must be specified for pod ${name}, choose one of: [${names.join(' ')}]`)
  if (!names.includes(container)) throw badRequest(`container ${container} is not valid for pod ${name}`)
  const status = isObject(pod.status) ? pod.status : {}
  const statuses = Array.isArray(status.containerStatuses) ? status.containerStatuses : []
  const cs = statuses.find((x) => isObject(x) && x.name === container) as { state?: Record<string, unknown> } | undefined
  if (!cs?.state || isObject(cs.state.waiting) || !(isObject(cs.state.running) || isObject(cs.state.terminated))) {
    const reason = isObject(cs?.state?.waiting) && typeof cs.state.waiting.reason === 'string' ? cs.state.waiting.reason : 'ContainerCreating'
    throw badRequest(`container "${container}" in pod "${name}" is waiting to start: ${reason}`)
  }
  return { status: 200, text: '', headers: { 'Content-Type': 'text/plain' } }
}

/** A GET of one object, as JSON or as a Table. */
export function get(c: ServerState, type: ResourceType, req: ApiRequest): Reply {
  const live = c.mustLive(type, req)
  if (wantsTable(c, req)) return tableReply(c, type, req, [live.obj])
  return c.objectReply(type, 200, live)
}

/** A LIST: filtered, paged, as a list or a Table. */
export function list(c: ServerState, type: ResourceType, req: ApiRequest): Reply {
  validateListOptions(req.query, false)
  const filter = filterOf(type, req)
  let items = c.store.list(tableOf(type), filter.namespace)
  if (!filter.labels.empty || !filter.fields.empty) items = items.filter((o) => storedMatches(filter, o))
  const rv = String(c.store.resourceVersion)
  const page = pageOf(items, req.query, rv)
  items = page.items
  const next = page.continue
  if (wantsTable(c, req)) return tableReply(c, type, req, items.map((o) => o.obj), next)
  const gv = groupVersion(type.group, type.version)
  let meta = `{"resourceVersion":${JSON.stringify(rv)}`
  if (next) meta += `,"continue":${JSON.stringify(next)},"remainingItemCount":${page.remainingItemCount ?? 0}`
  meta += '}'
  const parts = type.custom ? items.map((o) => c.jsonFor(type, o)) : items.map((o) => o.itemJson)
  return { status: 200, json: `{"kind":${JSON.stringify(type.listKind)},"apiVersion":${JSON.stringify(gv)},"metadata":${meta},"items":[${parts.join(',')}]}` }
}
