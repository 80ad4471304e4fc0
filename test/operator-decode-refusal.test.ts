/**
 * A chart that renders an integer into a ConfigMap's data: a real API server refuses the apply
 * (structured-merge-diff typed/validate.go, 500), so the CR is Degraded ApplyFailed with the
 * server's message, as it would be in production; the sandbox no longer stores the object and
 * reports the CR Reconciled.
 */
import t from 'tap'
import { loadChart } from '../operator/render/chart.ts'
import { chartWith } from './support/chart.ts'
import { eventually, findObject, startBed } from './support/operator.ts'

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
type Condition = { type: string; status: string; reason: string; message: string }

t.test('an integer in a rendered ConfigMap\'s data: Degraded ApplyFailed with the typed conversion\'s message, the ConfigMap not created', async (t) => {
  const chart = loadChart(chartWith({ 'templates/configmap-extra.ejs': 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: <%= fullname("extra") %>\ndata:\n  size: <%= values.size %>\n' }))
  const bed = await startBed({ chart })
  t.teardown(() => bed.stop())
  await bed.client.create({ ...MC, metadata: { name: 'typed', namespace: 'default' }, spec: { size: 1 } })
  const degraded = await eventually('typed Degraded ApplyFailed', async () => {
    const o = await bed.client.get({ ...MC, namespace: 'default', name: 'typed' })
    const d = ((o.status as { conditions?: Condition[] } | undefined)?.conditions ?? []).find((c) => c.type === 'Degraded')
    return d?.status === 'True' && d.reason === 'ApplyFailed' ? d : undefined
  })
  t.match(degraded.message, 'failed to create typed patch object (default/typed-extra; /v1, Kind=ConfigMap): .data.size: expected string, got &value.valueUnstructured{Value:1}')
  t.equal(await findObject(bed.client, 'v1', 'ConfigMap', 'typed-extra'), undefined, 'nothing stored')
})
