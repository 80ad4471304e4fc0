/**
 * Whether the kinds a chart declares can live in a Memcached's namespace, judged offline against
 * the built-in kinds of a v1.34 cluster (kube/builtin/kinds.ts); `lint` and `render` refuse a
 * cluster-scoped one, as the operator does when it starts (discovery).
 */
import type { ChartKind } from '../render/kinds.ts'
import { builtinSpecs } from '../kube/builtin/kinds.ts'

/**
 * Checks each declared kind against the built-in kinds (as a v1.34 cluster does): it must be namespaced, under its real resource name. A kind that is not built in (a CRD's)
 * cannot be known offline: it is returned in `unknown`, and the operator checks it at start.
 */
export function kindScopes(kinds: readonly ChartKind[]): { problems: string[]; unknown: ChartKind[] } {
  const problems: string[] = []
  const unknown: ChartKind[] = []
  kinds.forEach((k, i) => {
    const [group, version] = k.apiVersion.includes('/') ? k.apiVersion.split('/') : ['', k.apiVersion]
    const builtin = builtinSpecs.find((b) => b.group === group && b.version === version && b.kind === k.kind)
    const at = `kinds.yaml: kinds[${i}] (${k.apiVersion} ${k.kind})`
    if (!builtin) {
      const sameResource = builtinSpecs.find((b) => b.group === group && b.resource === k.resource)
      if (sameResource) problems.push(`${at}: resource ${k.resource} is of kind ${sameResource.kind}`)
      else unknown.push(k)
      return
    }
    if (!builtin.namespaced) problems.push(`${at}: cluster-scoped; a chart may declare only namespaced kinds (everything it renders lives in its Memcached's namespace)`)
    if (builtin.resource !== k.resource) problems.push(`${at}: resource is ${builtin.resource}, not ${k.resource}`)
  })
  return { problems, unknown }
}
