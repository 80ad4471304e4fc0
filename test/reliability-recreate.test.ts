/**
 * A CR deleted and created again under the same name (`kubectl delete` then `apply`, `replace
 * --force`) while the old CR's objects are still being collected: the new CR first sees objects
 * controlled by the old uid (an ownership conflict), and must be reconciled again as soon as they
 * are gone — not only at the conflict's minute-long retry. Found by the soak: under watch faults
 * the re-created CR stayed without its Service for about a minute.
 */
import t from 'tap'
import { loadChart } from '../operator/render/chart.ts'
import { startBed } from './support/operator.ts'
import { MC, memcached, sleep, statusOf, waitConverged } from './fixtures/reliability/support.ts'

t.test('a re-created CR converges as soon as the previous CR’s objects are gone', async (t) => {
  const chart = loadChart()
  const bed = await startBed()
  t.teardown(() => bed.stop())
  const c = bed.client
  await c.create(memcached('again', { size: 2 }))
  await waitConverged(c, chart, 20_000)
  // A finalizer holds the old Service in place, as a slow garbage collector would.
  const svc = { apiVersion: 'v1', kind: 'Service', namespace: 'default', name: 'again' }
  await c.patch(svc, { metadata: { finalizers: ['example.com/hold'] } }, { type: 'merge' })
  await c.delete({ ...MC, namespace: 'default', name: 'again' })
  for (;;) {
    const gone = await c.get({ ...MC, namespace: 'default', name: 'again' }).then(() => false, () => true)
    if (gone) break
    await sleep(10)
  }
  await c.create(memcached('again', { size: 2 }))
  for (let i = 0; ; i++) {
    const cr = await c.get({ ...MC, namespace: 'default', name: 'again' })
    if (statusOf(cr).conditions?.some((x) => x.type === 'Degraded' && x.reason === 'OwnershipConflict')) break
    if (i > 400) throw new Error('the new CR never saw the old Service')
    await sleep(25)
  }
  t.pass('the new CR first meets the old Service (controlled by the old uid)')
  // The collector finishes: the old Service goes.
  await c.patch(svc, { metadata: { finalizers: null } }, { type: 'merge' })
  // Well inside the conflict's one-minute retry: the disappearance itself must trigger the reconcile.
  const ms = await waitConverged(c, chart, 15_000)
  t.ok(ms >= 0, `converged ${ms} ms after the old Service went`)
  const cr = await c.get({ ...MC, namespace: 'default', name: 'again' })
  t.equal(statusOf(cr).conditions?.find((x) => x.type === 'Degraded')?.status, 'False', 'no longer Degraded')
})
