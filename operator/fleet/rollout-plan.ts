/**
 * The plan a rollout carries out (fleet/plan.ts): the Memcacheds it moves rendered with the target
 * revision and compared with the cluster by the same code as `plan` (cli/diff.ts compareAll: the
 * operator's render, server-side dry runs, ownership rules), through the operator's own client
 * so that the dry runs predict what its reconcile will do.
 */
import type { Memcached } from '../api/memcached.ts'
import type { KubeClient } from '../controller/client.ts'
import { compareAll, liveByList } from './compare.ts'
import type { Chart } from '../render/chart.ts'
import { kindKey, type ChartKind } from '../render/kinds.ts'
import { classify, type PlannedCr } from './plan.ts'

/** The kinds of `target` and of `watched` (the operator's own chart, the kinds it prunes over), each once. */
function kindsOf(target: Chart, watched: Chart): ChartKind[] {
  const seen = new Set(target.kinds.map(kindKey))
  return [...target.kinds, ...watched.kinds.filter((k) => !seen.has(kindKey(k)))]
}

/**
 * Plans `crs` against `target`; by `namespace/name`. `namespace`: the one namespace all of `crs`
 * are in, when they are (the live objects are then listed there only).
 */
export async function planFleet(client: KubeClient, target: Chart, watched: Chart, crs: readonly Memcached[], platform: string, namespace?: string): Promise<Map<string, PlannedCr>> {
  const kinds = kindsOf(target, watched)
  client.learnKinds(kinds)
  const live = await liveByList(client, [...crs], kinds, namespace)
  const describe = (err: unknown): string => (err instanceof Error ? err.message : String(err))
  const results = await compareAll({ client, chartOf: () => target, live, overrides: [], platform, fromContext: undefined, skipEqual: true, summaryOnly: true, pruneKinds: kinds }, crs, describe)
  const out = new Map<string, PlannedCr>()
  results.forEach((r, i) => {
    const cr = crs[i]!
    out.set(`${cr.metadata.namespace ?? 'default'}/${cr.metadata.name}`, { ...r.summary, class: classify(r.summary) })
  })
  return out
}
