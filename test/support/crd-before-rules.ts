/**
 * The Memcached CRD as a cluster may still hold it: without the chart's x-kubernetes-validations
 * (installed before the rules existed, or from an older chart). A CR it stores can break a rule,
 * which the operator then reports as InvalidSpec — what the tests of that path need.
 */
import { memcachedCRD } from '../../operator/api/crd.ts'
import type { Chart } from '../../operator/render/chart.ts'
import type { KubeObject } from '../../operator/controller/client.ts'

function strip(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(strip)
  if (typeof node !== 'object' || node === null) return node
  return Object.fromEntries(Object.entries(node).filter(([k]) => k !== 'x-kubernetes-validations').map(([k, v]) => [k, strip(v)]))
}

/** The chart's CRD without any x-kubernetes-validations rule. */
export function crdBeforeRules(chart: Chart): KubeObject {
  return strip(memcachedCRD(chart)) as KubeObject
}
