/** Optional kinds, as pure functions: what a render leaves out, and the condition that says so. */
import t from 'tap'
import type { ChartKind } from '../operator/render/kinds.ts'
import type { RenderedObject } from '../operator/render/manifest.ts'
import { optionalKindsCondition, splitNotServed } from '../operator/reconcile/optional.ts'

const kinds: ChartKind[] = [
  { apiVersion: 'apps/v1', kind: 'Deployment', resource: 'deployments', optional: false },
  { apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor', resource: 'servicemonitors', optional: true },
  { apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule', resource: 'prometheusrules', optional: true },
]
const object = (apiVersion: string, kind: string, name: string) => ({ apiVersion, kind, metadata: { name, namespace: 'default' } }) as RenderedObject
const deployment = object('apps/v1', 'Deployment', 'cache')
const monitor = object('monitoring.coreos.com/v1', 'ServiceMonitor', 'cache')
const rules = [object('monitoring.coreos.com/v1', 'PrometheusRule', 'cache'), object('monitoring.coreos.com/v1', 'PrometheusRule', 'cache-slo')]
const why = 'the cluster does not serve monitoring.coreos.com/v1'

t.test('objects of optional kinds not served are left out, the rest is applied in order', async (t) => {
  const unserved = new Map([['monitoring.coreos.com/v1/ServiceMonitor', why], ['monitoring.coreos.com/v1/PrometheusRule', why]])
  const { apply, left } = splitNotServed(kinds, [deployment, monitor, ...rules], unserved)
  t.same(apply, [deployment])
  t.same(left.map((l) => l.object.metadata.name), ['cache', 'cache', 'cache-slo'])
  const c = optionalKindsCondition(kinds, left)
  t.same(c, {
    type: 'OptionalKindsServed',
    status: 'False',
    reason: 'KindNotServed',
    message: `not applied, the cluster does not serve their kind: ServiceMonitor cache (${why}); PrometheusRule cache, cache-slo (${why})`,
  })
})

t.test('a kind that is not optional is never left out, even when not served', async (t) => {
  const { apply, left } = splitNotServed(kinds, [deployment], new Map([['apps/v1/Deployment', 'not served']]))
  t.same(apply, [deployment])
  t.same(left, [])
})

t.test('served: True AllServed; a chart without optional kinds has no such condition', async (t) => {
  const { apply, left } = splitNotServed(kinds, [deployment, monitor], new Map())
  t.same(apply, [deployment, monitor])
  t.same(optionalKindsCondition(kinds, left), { type: 'OptionalKindsServed', status: 'True', reason: 'AllServed', message: 'every optional kind the chart rendered is served and applied' })
  t.equal(optionalKindsCondition(kinds.slice(0, 1), []), undefined)
})
