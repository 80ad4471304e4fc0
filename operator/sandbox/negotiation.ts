/**
 * Output negotiation of the `Accept` header, and the metadata-only views it may ask for, as
 * kube-apiserver does them:
 *
 * - apiserver `endpoints/handlers/negotiation/negotiate.go` (`NegotiateMediaTypeOptions`): the
 *   Accept clauses are tried in quality order; a clause names a media type the server encodes
 *   (here JSON only, see the README's deviations) and may ask, with `as`, `g` and `v`, for the
 *   object to be converted; the first clause the endpoint allows wins, and when none does the
 *   request is 406 `only the following media types are accepted: …`.
 * - apiserver `endpoints/handlers/rest.go` (`RequestScope.AllowsMediaTypeTransform`): the
 *   conversions allowed are `Table`, `PartialObjectMetadata` and `PartialObjectMetadataList` of
 *   `meta.k8s.io` `v1` and `v1beta1`, on lists and single objects alike.
 * - apiserver `endpoints/handlers/response.go` (`doTransformObject`, `asPartialObjectMetadata`,
 *   `asPartialObjectMetadataList`): the object keeps only its `metadata` (all of it,
 *   `meta.AsPartialObjectMetadata`), as `kind: PartialObjectMetadata` of the group version asked
 *   for; a list becomes a `PartialObjectMetadataList` with the list's resourceVersion, continue
 *   token and remaining count. Asking for the one on the other (a list as PartialObjectMetadata,
 *   an object as PartialObjectMetadataList) is 406. A Status is never converted.
 * - apiserver `endpoints/handlers/watch.go` with response.go's `watchEmbeddedEncoder`: in a watch
 *   every event's object, BOOKMARKs included, goes through the same conversion; one that fails
 *   (a PartialObjectMetadataList asked of a watch's single objects) is logged by the server and
 *   the object is sent unconverted.
 */
import { StatusError } from './errors.ts'

/** A conversion a client asked for with `as`, `g` and `v`. */
export interface OutputTarget {
  kind: 'Table' | 'PartialObjectMetadata' | 'PartialObjectMetadataList'
  /** `v1` or `v1beta1` of `meta.k8s.io`. */
  version: 'v1' | 'v1beta1'
}

/** What kube-apiserver encodes, as its 406 lists them (`MediaTypesForSerializer`; the sandbox answers JSON only). */
const SERVED_MEDIA_TYPES = ['application/json', 'application/yaml', 'application/vnd.kubernetes.protobuf']

interface Clause {
  type: string
  subType: string
  q: number
  params: Map<string, string>
}

/** The clauses of an Accept header, by quality then specificity, as github.com/munnerz/goautoneg `ParseAccept` sorts them. */
function parseAccept(header: string): Clause[] {
  const clauses: Clause[] = []
  for (const part of header.split(',')) {
    const [mediaRange = '', ...rest] = part.split(';')
    const [type = '', subType = ''] = mediaRange.trim().split('/')
    const params = new Map<string, string>()
    let q = 1
    for (const p of rest) {
      const eq = p.indexOf('=')
      if (eq < 0) continue
      const key = p.slice(0, eq).trim()
      const value = p.slice(eq + 1).trim()
      if (key === 'q') q = Number.parseFloat(value) || 0
      else params.set(key, value)
    }
    clauses.push({ type, subType, q, params })
  }
  const rank = (c: Clause): number => (c.type === '*' ? 2 : c.subType === '*' ? 1 : 0)
  return clauses.map((c, i) => ({ c, i })).sort((a, b) => b.c.q - a.c.q || rank(a.c) - rank(b.c) || a.i - b.i).map((x) => x.c)
}

/**
 * The conversion the Accept header asks for (undefined: the object as it is), or a 406 when no
 * clause can be served. A header without any `as` that names only media types the sandbox does
 * not encode is answered in JSON, as the sandbox always did (a declared deviation).
 * @throws StatusError 406 NotAcceptable
 */
export function negotiateOutput(accept: string | undefined): OutputTarget | undefined {
  if (accept === undefined || accept.trim() === '') return undefined
  const clauses = parseAccept(accept)
  for (const c of clauses) {
    if (c.q <= 0) continue
    const json = (c.type === 'application' && (c.subType === 'json' || c.subType === '*')) || (c.type === '*' && c.subType === '*')
    if (!json) continue
    const as = c.params.get('as')
    const g = c.params.get('g')
    const v = c.params.get('v')
    if (as === undefined && g === undefined && v === undefined) return undefined
    if (g !== 'meta.k8s.io' || (v !== 'v1' && v !== 'v1beta1')) continue
    if (as === 'PartialObjectMetadata' || as === 'PartialObjectMetadataList' || as === 'Table') return { kind: as, version: v }
  }
  if (clauses.every((c) => !c.params.has('as') && !c.params.has('g') && !c.params.has('v'))) return undefined
  throw notAcceptable(`only the following media types are accepted: ${SERVED_MEDIA_TYPES.join(', ')}`)
}

/** 406 NotAcceptable, as response.go's `errNotAcceptable` (no details). */
export function notAcceptable(message: string): StatusError {
  return new StatusError(406, 'NotAcceptable', message)
}

/** The Content-Type of a converted answer (responsewriters.go `generateMediaTypeWithGVK`). */
export function contentTypeOf(target: OutputTarget): string {
  return `application/json;g=meta.k8s.io;v=${target.version};as=${target.kind}`
}

/** How `%T` prints the object a registry holds: the internal type of a built-in kind, Unstructured for a custom resource. */
function goType(group: string, kind: string, custom: boolean, list: boolean): string {
  if (custom) return list ? '*unstructured.UnstructuredList' : '*unstructured.Unstructured'
  const pkg = group === '' || group === 'events.k8s.io' ? 'core' : (group.split('.')[0] ?? group)
  return `*${pkg}.${kind}${list ? 'List' : ''}`
}

/** What a conversion needs to know of the resource. */
export interface ConvertedType {
  group: string
  kind: string
  custom?: boolean
}

/** An object's PartialObjectMetadata (response.go `asPartialObjectMetadata`). */
export function partialObjectMetadata(obj: { metadata?: unknown }, version: OutputTarget['version']): Record<string, unknown> {
  return { kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${version}`, metadata: obj.metadata ?? {} }
}

/**
 * Converts an answer's JSON body to what `target` asks for. A Status (a delete's answer) is sent
 * as it is. @throws StatusError 406 when a list is asked for as an object or the reverse
 */
export function convertBody(json: string, type: ConvertedType, target: OutputTarget): string {
  const obj = JSON.parse(json) as { kind?: string; metadata?: Record<string, unknown>; items?: { metadata?: unknown }[] }
  if (obj.kind === 'Status') return json
  const list = Array.isArray(obj.items)
  if (target.kind === 'PartialObjectMetadata') {
    if (list) throw notAcceptable(`you requested PartialObjectMetadata, but the requested object is a list (${goType(type.group, type.kind, type.custom === true, true)})`)
    return JSON.stringify(partialObjectMetadata(obj, target.version))
  }
  if (!list) throw notAcceptable(`you requested PartialObjectMetadataList, but the requested object is not a list (${goType(type.group, type.kind, type.custom === true, false)})`)
  const { resourceVersion, continue: cont, remainingItemCount } = obj.metadata ?? {}
  const metadata = { ...(resourceVersion !== undefined ? { resourceVersion } : {}), ...(cont ? { continue: cont } : {}), ...(remainingItemCount !== undefined ? { remainingItemCount } : {}) }
  return JSON.stringify({ kind: 'PartialObjectMetadataList', apiVersion: `meta.k8s.io/${target.version}`, metadata, items: (obj.items ?? []).map((i) => partialObjectMetadata(i, target.version)) })
}

/**
 * The conversion of a watch's event objects, or undefined when they are sent as they are: only
 * PartialObjectMetadata converts a single object (watch.go); a Table is rendered by the caller.
 */
export function watchConversion(target: OutputTarget | undefined): ((json: string) => string) | undefined {
  if (target?.kind !== 'PartialObjectMetadata') return undefined
  const version = target.version
  return (json) => JSON.stringify(partialObjectMetadata(JSON.parse(json) as { metadata?: unknown }, version))
}
