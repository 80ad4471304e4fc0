/**
 * A rollout and the operator's damage budget (reconcile/budget.ts): a rollout that moves more CRs
 * whose change restarts pods than `--max-restarts` allows in a `--budget-window` sees the CRs past
 * the budget wait (Progressing BudgetExhausted, nothing of them applied). The health gate counts
 * them as waiting, not failed — their deadline does not run while the budget holds them — and the
 * Rollout says that its wave waits on the damage budget; once the window has room they move, and
 * the rollout ends as any other. The operator runs as `run --max-restarts 2 --budget-window 6s`.
 */
import t from 'tap'
import { startFleetBed, nameA, RO, valuesRevision, type Cr } from './support/fleet.ts'
import { eventually } from './support/operator.ts'

const { kubectl, fleet, rollout, push, createFleet } = await startFleetBed(t, { flags: { maxRestarts: '2', budgetWindow: '6s' } })
const waitsOnBudget = (cr: Cr) => cr.status?.conditions?.find((c) => c.type === 'Progressing')?.reason === 'BudgetExhausted'

// Six CRs: creating them restarts nothing, so the budget is whole when the rollout starts.
const N = 6
await createFleet(N)

t.test('a rollout of more pod restarts than the budget: the CRs past it wait, the gate does not fail them, the Rollout says it waits on the budget, and it succeeds', async (t) => {
  // B: one pod annotation more, so every CR's move restarts its pods.
  const nameB = await push(valuesRevision('podAnnotations: {}', 'podAnnotations: {revision: b}'))
  // A deadline shorter than the budget's window: a CR held by the budget would miss it.
  await kubectl(['apply', '-f', '-'], JSON.stringify({ ...RO, metadata: { name: 'to-b' }, spec: { revision: nameB, maxInFlight: N, healthDeadline: '3s' } }))
  const waiting = await eventually('the wave waits on the budget', async () => {
    const s = await rollout('to-b')
    return s.conditions?.find((c) => c.type === 'Progressing')?.reason === 'BudgetExhausted' ? s : undefined
  }, 30_000)
  t.match(waiting.message, /^wave 1\/1 waits on the damage budget: [1-4] of its Memcacheds wait for the operator's budget of pod restarts \(--max-restarts\); their health deadline does not run meanwhile/)
  t.match(waiting.conditions?.find((c) => c.type === 'Progressing'), { status: 'True', message: waiting.message })
  t.ok(waiting.members?.some((m) => m.state === 'moving' && /^waits on the damage budget: the change would restart the pods of Deployment default\/mc-\d/.test(m.message ?? '')), 'a waiting member says what it waits for')
  const held = (await fleet()).filter(waitsOnBudget)
  t.ok(held.length > 0, 'some CRs wait BudgetExhausted')
  t.same(held.filter((cr) => cr.status?.chartRevision !== nameA).map((cr) => cr.metadata.name), [], 'a CR the budget holds still reports the revision its objects run: A')
  t.equal(await kubectl(['get', 'rollout', 'to-b', '-o', 'jsonpath={.status.conditions[?(@.type=="Progressing")].reason}']), 'BudgetExhausted', 'kubectl shows it')

  const done = await eventually('the rollout ends', async () => {
    const s = await rollout('to-b')
    return s.phase === 'Succeeded' || s.phase === 'Halted' ? s : undefined
  }, 60_000)
  t.equal(done.phase, 'Succeeded', done.message ?? '')
  const crs = await fleet()
  t.same(crs.filter((cr) => cr.status?.chartRevision !== nameB || cr.spec.chartRevision !== undefined).map((cr) => cr.metadata.name), [], 'every CR runs B with no pin')
  const events = await kubectl(['get', 'events', '-n', 'default', '--field-selector', 'involvedObject.kind=Rollout,involvedObject.name=to-b', '-o', 'jsonpath={range .items[*]}{.type} {.reason}{"\\n"}{end}'])
  t.match(events, /^Normal BudgetExhausted$/m, 'an event when the wave began to wait')
  t.notMatch(events, /HealthGateFailed/)
})
