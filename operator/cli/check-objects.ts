/**
 * Rendered objects judged offline as a 1.34 API server would judge them when the operator applies
 * them (kubeconform-style, against upstream's schemas): decoding into the kind's Go type (a value
 * of the wrong type, a quantity that does not parse), fields the kind does not declare, then the
 * kind's validation after the server's defaulting (a protocol `TCPX`, a selector that does not
 * match its template). Kinds without a built-in schema (a CRD's) are not judged.
 */
import { decodeProblem, unknownFields } from '../kube/openapi-validate.ts'
import { defaultBuiltin } from '../kube/builtin/defaults.ts'
import { prepareService } from '../kube/builtin/service.ts'
import type { KubeObject } from '../kube/object.ts'
import { validateBuiltin } from '../kube/builtin/validation.ts'

/** Any address serves: validation only looks at its shape. */
const SOME_CLUSTER_IP = '10.96.0.10'

/** The problems a server would refuse `object` for, each `path: message`; empty when it would accept it. */
export function objectProblems(object: Record<string, unknown>): string[] {
  const apiVersion = typeof object.apiVersion === 'string' ? object.apiVersion : ''
  const kind = typeof object.kind === 'string' ? object.kind : ''
  const [group, version] = apiVersion.includes('/') ? (apiVersion.split('/') as [string, string]) : ['', apiVersion]
  const decoding = decodeProblem(group, version, kind, object)
  if (decoding === undefined) {
    const unknown = unknownFields(group, version, kind, object, false)
    if (unknown === undefined) return []
    if (unknown.length > 0) return unknown.map((p) => `${p}: field not declared in schema`)
  } else return [`${decoding.path}: ${decoding.message}`]
  const obj = structuredClone(object) as unknown as KubeObject
  if (group === '' && kind === 'Secret' && isMap(obj.stringData)) {
    obj.data = { ...(isMap(obj.data) ? obj.data : {}), ...Object.fromEntries(Object.entries(obj.stringData).map(([k, v]) => [k, Buffer.from(String(v)).toString('base64')])) }
    delete obj.stringData
  }
  defaultBuiltin(obj, { allocateClusterIP: () => SOME_CLUSTER_IP })
  const causes = group === '' && kind === 'Service' ? prepareService(obj, undefined, () => SOME_CLUSTER_IP) : []
  if (causes.length === 0) causes.push(...validateBuiltin(obj, undefined))
  return causes.map((c) => `${c.field}: ${c.message}`)
}

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** Every problem of rendered objects, each named by its template and object: `templates/service.ejs: Service/x: spec.ports[0].protocol: …`. */
export function renderedProblems(objects: readonly unknown[], sources: readonly string[]): string[] {
  const out: string[] = []
  objects.forEach((o, i) => {
    if (!isMap(o)) return
    const meta = isMap(o.metadata) ? o.metadata : {}
    const who = `${String(o.kind ?? '')}/${String(meta.name ?? '')}`
    for (const p of objectProblems(o)) out.push(`${sources[i] ?? ''}: ${who}: ${p}`)
  })
  return out
}
