/**
 * Lint of a chart's patchable declarations (kinds.yaml `patchable`): each path of a built-in kind
 * must name a field of the kind's OpenAPI definition (Kubernetes 1.34), a list item only in a
 * list, `[key=value]` only by the list's merge key. Kinds without a definition here (custom
 * resources) are checked for syntax only, when the chart is loaded.
 */
import { definitionOf, resolve, type Schema } from '../kube/openapi-validate.ts'
import { groupOf, type ChartKind } from '../render/kinds.ts'
import { formatPath, type Segment } from '../render/overlay-paths.ts'

/** Why `path` names no field of `schema`, or undefined when it does. */
function pathProblem(schema: Schema, path: readonly Segment[]): string | undefined {
  let cur: Schema | undefined = resolve(schema)
  for (const [i, seg] of path.entries()) {
    const here = formatPath(path.slice(0, i + 1))
    if (cur === undefined) return `${here}: no such field`
    if ('field' in seg) {
      const props = cur.properties as Record<string, Schema> | undefined
      const extra = cur.additionalProperties
      if (props !== undefined && Object.hasOwn(props, seg.field)) cur = resolve(props[seg.field]!)
      else if (typeof extra === 'object' && extra !== null) cur = resolve(extra as Schema)
      else return `${here}: no such field`
    } else {
      if (cur.type !== 'array') return `${here}: ${formatPath(path.slice(0, i))} is not a list`
      if ('key' in seg && cur['x-kubernetes-patch-merge-key'] !== seg.key) return `${here}: the list's items are not merged by ${seg.key}${cur['x-kubernetes-patch-merge-key'] ? ` (its merge key is ${String(cur['x-kubernetes-patch-merge-key'])})` : ' (it has no merge key: write [*])'}`
      cur = cur.items === undefined ? undefined : resolve(cur.items as Schema)
    }
  }
  return undefined
}

/** Every patchable declaration that names no field of its kind, as `kinds.yaml: Kind: patchable: problem`. */
export function patchableProblems(kinds: readonly ChartKind[]): string[] {
  const problems: string[] = []
  for (const k of kinds) {
    const slash = k.apiVersion.indexOf('/')
    const def = definitionOf(groupOf(k.apiVersion), k.apiVersion.slice(slash + 1), k.kind)
    if (def === undefined) continue
    for (const p of k.patchable ?? []) {
      const why = pathProblem(def, p)
      if (why) problems.push(`kinds.yaml: ${k.kind}: patchable ${formatPath(p)}: ${why}`)
    }
  }
  return problems
}
