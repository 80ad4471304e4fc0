/**
 * A rollout of a revision that re-creates every workload (another chart name: every selector
 * moves) under the operator's pacing of re-creations (reconcile/pacing.ts,
 * `--max-concurrent-recreations 1`, the default): the CRs of a wave take their turns one at a
 * time, each holding its slot until its replacement is ready. The health gate counts a CR that
 * waits for its turn (Progressing RecreationQueued) as waiting, not failed: its deadline does not
 * run meanwhile, so a wave larger than the deadline's worth of turns still succeeds, and the
 * Rollout says what its wave waits on.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { DEFAULT_CHART_DIR } from '../operator/render/chart.ts'
import { chartWith } from './support/chart.ts'
import { RO, startFleetBed } from './support/fleet.ts'
import { eventually } from './support/operator.ts'

// Pods ready a second after they start: each re-creation holds the one slot for at least that long.
// No delete budget (`--max-deletes 0`): what paces this rollout is the re-creation slot alone.
const { kubectl, fleet, rollout, push, createFleet } = await startFleetBed(t, { sandbox: { podReadyDelayMs: 1000 }, flags: { maxDeletes: '0', maxConcurrentRecreations: '1' } })

const N = 6
await createFleet(N)

t.test('a rollout whose CRs re-create their workloads one at a time: the CRs waiting for their turn do not fail the gate, the Rollout says what it waits on, and it succeeds', async (t) => {
  // B: the chart renamed, so every Deployment's selector moves and it must be re-created.
  const nameB = await push(chartWith({ 'Chart.yaml': readFileSync(join(DEFAULT_CHART_DIR, 'Chart.yaml'), 'utf8').replace(/^name: memcached$/m, 'name: cache') }))
  // Six turns of at least a second each, all in flight at once, against a 3 s deadline: the last
  // CRs wait longer than the deadline for their turn.
  await kubectl(['apply', '-f', '-'], JSON.stringify({ ...RO, metadata: { name: 'to-b' }, spec: { revision: nameB, maxInFlight: N, healthDeadline: '3s' } }))
  const waiting = await eventually('the wave waits for re-creation slots', async () => {
    const s = await rollout('to-b')
    return s.conditions?.find((c) => c.type === 'Progressing')?.reason === 'BudgetExhausted' ? s : undefined
  }, 30_000)
  t.match(waiting.message, /^wave 1\/1 waits on the damage budget: [1-5] of its Memcacheds wait for the operator's budget of re-creations at a time \(--max-concurrent-recreations\); their health deadline does not run meanwhile/)
  t.ok(waiting.members?.some((m) => m.state === 'moving' && /^waits on the damage budget: Deployment default\/mc-\d must be deleted and re-created \(spec\.selector cannot change in place\) and waits for its turn/.test(m.message ?? '')), 'a waiting member says what it waits for')

  const done = await eventually('the rollout ends', async () => {
    const s = await rollout('to-b')
    return s.phase === 'Succeeded' || s.phase === 'Halted' ? s : undefined
  }, 90_000)
  t.equal(done.phase, 'Succeeded', done.message ?? '')
  const crs = await fleet()
  t.same(crs.filter((cr) => cr.status?.chartRevision !== nameB || cr.spec.chartRevision !== undefined).map((cr) => cr.metadata.name), [], 'every CR runs B with no pin')
  const events = await kubectl(['get', 'events', '-n', 'default', '--field-selector', 'involvedObject.kind=Rollout,involvedObject.name=to-b', '-o', 'jsonpath={range .items[*]}{.type} {.reason}{"\\n"}{end}'])
  t.notMatch(events, /HealthGateFailed/)
})
