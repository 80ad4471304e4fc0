/**
 * Staged rollout end to end, with real kubectl against the sandbox: a fleet on revision A (the
 * operator's own chart) moves to revision B in waves (by label, then by percentage) and ends with
 * every CR on B, B promoted and no pin left; a revision C whose pods never become ready halts in
 * its first wave, which goes back to B by itself, no later wave is touched, and the Rollout says why.
 * C's image is one the sandbox's kubelet runs and never reports ready (a NeverReady pod-failure rule:
 * sandbox/controllers/pod-failures.ts), as a kubelet reports a readiness probe that never passes.
 */
import t from 'tap'
import { runCli } from '../operator/cli/program.ts'
import { MC, nameA, RO, revisionOf, startFleetBed, valuesRevision } from './support/fleet.ts'
import { captureIO } from './support/io.ts'
import { eventually } from './support/operator.ts'

const { sandbox, user, kubectl, fleet, rollout, phase } = await startFleetBed(t, { sandbox: { podFailures: [{ image: ':unready$', failure: 'NeverReady' }] } })

const cli = async (args: string[]) => {
  const io = captureIO()
  const code = await runCli([...args, '--kubeconfig', sandbox.kubeconfigPath], io)
  return { code, out: io.out(), err: io.err() }
}
// B: one pod annotation more. C: an image whose pods run and never become ready (the sandbox's rule).
const dirB = valuesRevision('podAnnotations: {}', 'podAnnotations: {revision: b}')
const nameB = revisionOf(dirB)
const dirC = valuesRevision('tag: 1.6.38-alpine', 'tag: unready')
const nameC = revisionOf(dirC)

// 12 CRs: 2 canaries, 10 more.
const N = 12
const objects = Array.from({ length: N }, (_, i) => ({ ...MC, metadata: { name: `mc-${String(i).padStart(2, '0')}`, namespace: i % 2 === 0 ? 'default' : 'team-a', labels: i < 2 ? { tier: 'canary' } : {} }, spec: { size: 1 } }))
await user.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } })
await kubectl(['apply', '-f', '-'], objects.map((o) => JSON.stringify(o)).join('\n'))
await eventually('the fleet runs A', async () => ((await fleet()).every((cr) => cr.status?.chartRevision === nameA) ? true : undefined), 60_000)

t.test('a rollout to B in waves: every CR on B, B promoted, no pin left; kubectl shows it', async (t) => {
  t.equal((await cli(['chart', 'push', dirB])).code, 0)
  const spec = { revision: nameB, maxInFlight: 2, healthDeadline: '60s', waves: [{ name: 'canary', selector: { matchLabels: { tier: 'canary' } } }, { percent: 25 }, { percent: 50 }] }
  await kubectl(['apply', '-f', '-'], JSON.stringify({ ...RO, metadata: { name: 'to-b' }, spec }))
  await phase('to-b', 'Succeeded')
  const crs = await fleet()
  t.same(crs.filter((cr) => cr.status?.chartRevision !== nameB).map((cr) => cr.metadata.name), [], 'every CR runs B')
  t.same(crs.filter((cr) => cr.spec.chartRevision !== undefined).map((cr) => cr.metadata.name), [], 'no pin is left')
  const revisions = await kubectl(['get', 'chartrevisions', '-l', 'cache.example.com/default=true', '-o', 'jsonpath={.items[*].metadata.name}'])
  t.equal(revisions, nameB, 'B is the default, alone')
  const s = await rollout('to-b')
  t.equal(s.progress, `${N}/${N}`)
  t.equal(s.wave, '4/4', 'canary, 25%, 50%, the rest')
  t.match(s.conditions?.find((c) => c.type === 'Ready'), { status: 'True', reason: 'Promoted' })
  const table = await kubectl(['get', 'rollouts'])
  t.match(table, /^NAME\s+REVISION\s+PHASE\s+WAVE\s+UPDATED\s+AGE/m, 'printer columns')
  t.match(table, new RegExp(`^to-b\\s+${nameB}\\s+Succeeded\\s+4/4\\s+${N}/${N}\\s+\\d+s`, 'm'))
  const events = await kubectl(['get', 'events', '-n', 'default', '--field-selector', 'involvedObject.kind=Rollout,involvedObject.name=to-b', '-o', 'jsonpath={range .items[*]}{.reason}{"\\n"}{end}'])
  t.same([...new Set(events.trim().split('\n'))].sort(), ['Promoted', 'Started', 'WaveComplete', 'WaveStarted'])
  const status = await cli(['rollout', 'status', 'to-b'])
  t.equal(status.code, 0)
  t.match(status.out, `Rollout to-b to ${nameB}: Succeeded`)
})

t.test('a rollout to C whose pods never become ready halts in its first wave, which returns to B; no later wave is touched', async (t) => {
  t.equal((await cli(['chart', 'push', dirC])).code, 0)
  const spec = { revision: nameC, maxInFlight: 2, healthDeadline: '3s', waves: [{ name: 'canary', selector: { matchLabels: { tier: 'canary' } } }, { percent: 50 }] }
  await kubectl(['apply', '-f', '-'], JSON.stringify({ ...RO, metadata: { name: 'to-c' }, spec }))
  await phase('to-c', 'Halted')
  const s = await rollout('to-c')
  t.equal(s.wave, '1/3')
  t.match(s.conditions?.find((c) => c.type === 'Halted'), { status: 'True', reason: 'HealthGateFailed' })
  t.match(s.message, /failed the health gate in wave 1\/3: not Ready and Available on memcached-[0-9a-f]+ within 3s: (Ready|Available)=False/)
  t.match(s.message, /: (Ready|Available)=False [^;]*; pod mc-0[01]-[a-z0-9]+-[a-z0-9]+: container memcached running, not ready/, 'and why, as the kubelet reports it: the container runs and is never ready')
  t.same(s.members?.map((m) => [m.memcached, m.state, m.from]), [['default/mc-00', 'returned', nameB], ['team-a/mc-01', 'returned', nameB]])
  await eventually('the canaries run B again', async () => {
    const crs = await fleet()
    return crs.filter((cr) => cr.metadata.labels?.['tier'] === 'canary').every((cr) => cr.status?.chartRevision === nameB && cr.spec.chartRevision === nameB) ? true : undefined
  })
  const later = (await fleet()).filter((cr) => cr.metadata.labels?.['tier'] !== 'canary')
  t.same(later.filter((cr) => cr.spec.chartRevision !== undefined || cr.status?.chartRevision !== nameB).map((cr) => cr.metadata.name), [], 'no CR of a later wave was touched')
  const defaults = await kubectl(['get', 'chartrevisions', '-l', 'cache.example.com/default=true', '-o', 'jsonpath={.items[*].metadata.name}'])
  t.equal(defaults, nameB, 'C was not promoted')
  const status = await cli(['rollout', 'status', 'to-c'])
  t.equal(status.code, 1, 'rollout status exits 1 on a halted rollout')
  t.match(status.out, /default\/mc-00 {2}returned \(from memcached-[0-9a-f]+\): not Ready and Available/)
  const events = await kubectl(['get', 'events', '-n', 'default', '--field-selector', 'involvedObject.kind=Rollout,involvedObject.name=to-c,type=Warning', '-o', 'jsonpath={.items[*].reason}'])
  t.match(events, 'HealthGateFailed')
  t.equal((await cli(['rollout', 'resume', 'to-c'])).code, 1, 'an ended rollout cannot be resumed')
})

// D and E: healthy changes (one more pod annotation each).
const dirD = valuesRevision('podAnnotations: {}', 'podAnnotations: {revision: d}')
const nameD = revisionOf(dirD)
const dirE = valuesRevision('podAnnotations: {}', 'podAnnotations: {revision: e}')
const nameE = revisionOf(dirE)

t.test('a person\'s pin and a CR that moved after the plan are held, reported, and left where they are; pause from kubectl, resume from the CLI', async (t) => {
  t.equal((await cli(['chart', 'push', dirD])).code, 0)
  t.equal((await cli(['chart', 'push', dirE])).code, 0)
  // A person pins mc-02 (kubectl's field manager, not the rollout's).
  await kubectl(['patch', 'mc', 'mc-02', '-n', 'default', '--type', 'merge', '-p', JSON.stringify({ spec: { chartRevision: nameB } })])
  await kubectl(['apply', '-f', '-'], JSON.stringify({ ...RO, metadata: { name: 'to-d' }, spec: { revision: nameD, paused: true, healthDeadline: '60s', maxInFlight: 3 } }))
  await phase('to-d', 'Paused')
  const paused = await rollout('to-d')
  t.match(paused.conditions?.find((c) => c.type === 'Progressing'), { status: 'False', reason: 'Paused' })
  t.same((await fleet()).filter((cr) => cr.status?.chartRevision === nameD).map((cr) => cr.metadata.name), [], 'nothing moves while paused')
  // mc-04's Deployment changes after the plan was made: its change is no longer the one planned.
  await kubectl(['annotate', 'deployment', 'mc-04', '-n', 'default', 'team/owner=someone'])
  const resumed = await cli(['rollout', 'resume', 'to-d'])
  t.equal(resumed.code, 0, resumed.err)
  t.equal(resumed.out, 'rollout.cache.example.com/to-d resumed\n')
  await phase('to-d', 'Succeeded')
  const crs = new Map((await fleet()).map((cr) => [cr.metadata.name, cr]))
  t.same([crs.get('mc-02')!.spec.chartRevision, crs.get('mc-02')!.status?.chartRevision], [nameB, nameB], 'the person\'s pin holds mc-02 on B')
  t.same([crs.get('mc-04')!.spec.chartRevision, crs.get('mc-04')!.status?.chartRevision], [nameB, nameB], 'mc-04 is held on B by the rollout\'s pin')
  const held = (await user.get({ ...RO, name: 'to-d' })).status as { held?: { memcached: string; reason: string }[] }
  t.match(held.held, [
    { memcached: 'default/mc-02', reason: `pinned to ${nameB} by kubectl-patch` },
    { memcached: 'default/mc-04', reason: /Deployment\/default\/mc-04: changed since the plan/ },
  ])
  t.same([...crs.values()].filter((cr) => !['mc-02', 'mc-04'].includes(cr.metadata.name) && (cr.status?.chartRevision !== nameD || cr.spec.chartRevision !== undefined)).map((cr) => cr.metadata.name), [], 'the others run D with no pin')
  const events = await kubectl(['get', 'events', '-n', 'default', '--field-selector', 'involvedObject.name=to-d', '-o', 'jsonpath={range .items[*]}{.reason}{"\\n"}{end}'])
  t.match(events, /Paused[\s\S]*Resumed/)
  t.match(events, /Held/)
})

t.test('pause from the CLI, abort from kubectl: the wave in flight returns to its previous revisions', async (t) => {
  await kubectl(['apply', '-f', '-'], JSON.stringify({ ...RO, metadata: { name: 'to-e' }, spec: { revision: nameE, bakeTime: '1h', healthDeadline: '60s', maxInFlight: 2, waves: [{ selector: { matchLabels: { tier: 'canary' } } }] } }))
  await eventually('the canary wave bakes', async () => (/bakes until/.test((await rollout('to-e')).message ?? '') ? true : undefined), 60_000)
  const paused = await cli(['rollout', 'pause', 'to-e'])
  t.equal(paused.code, 0, paused.err)
  await phase('to-e', 'Paused')
  await kubectl(['patch', 'rollout', 'to-e', '--type', 'merge', '-p', '{"spec":{"abort":true}}'])
  await phase('to-e', 'Aborted')
  t.match((await rollout('to-e')).conditions?.find((c) => c.type === 'Halted'), { status: 'True', reason: 'Aborted' })
  await eventually('the canaries run D again', async () => ((await fleet()).filter((cr) => cr.metadata.labels?.['tier'] === 'canary').every((cr) => cr.status?.chartRevision === nameD && cr.spec.chartRevision === nameD) ? true : undefined))
  t.same((await fleet()).filter((cr) => cr.status?.chartRevision === nameE).map((cr) => cr.metadata.name), [], 'no CR stays on E')
  const again = await cli(['rollout', 'abort', 'to-e'])
  t.equal(again.code, 1)
  t.match(again.err, 'has ended (Aborted)')
  const missing = await cli(['rollout', 'status', 'nope'])
  t.equal(missing.code, 1)
  t.match(missing.err, 'Rollout "nope" does not exist')
})

t.test('a rollout to a revision that does not exist fails; a younger rollout waits for the older one', async (t) => {
  await kubectl(['apply', '-f', '-'], JSON.stringify({ ...RO, metadata: { name: 'to-nothing' }, spec: { revision: 'memcached-000000000000', paused: true } }))
  await phase('to-nothing', 'Failed')
  t.match((await rollout('to-nothing')).message, /memcached-000000000000.*does not exist/)
  await kubectl(['apply', '-f', '-'], JSON.stringify({ ...RO, metadata: { name: 'first' }, spec: { revision: nameE, paused: true } }))
  await phase('first', 'Paused')
  await kubectl(['apply', '-f', '-'], JSON.stringify({ ...RO, metadata: { name: 'second' }, spec: { revision: nameE } }))
  await eventually('second waits', async () => (/waits for Rollout first/.test((await rollout('second')).message ?? '') ? true : undefined))
  t.equal((await rollout('second')).phase, 'Pending')
  await cli(['rollout', 'abort', 'first'])
  await cli(['rollout', 'abort', 'second'])
  await phase('second', 'Aborted')
})

t.test('a wave that takes no CR is skipped; CRs deleted during their wave are reported, not waited for', async (t) => {
  await kubectl(['apply', '-f', '-'], JSON.stringify({ ...MC, metadata: { name: 'mc-extra', namespace: 'default', labels: { tier: 'canary' } }, spec: { size: 1 } }))
  await eventually('mc-extra runs', async () => ((await user.get({ ...MC, namespace: 'default', name: 'mc-extra' })).status as { chartRevision?: string } | undefined)?.chartRevision)
  // To C, whose pods never become ready, with a long deadline: the CRs moved stay in flight.
  await kubectl(['apply', '-f', '-'], JSON.stringify({ ...RO, metadata: { name: 'deleted' }, spec: { revision: nameC, maxInFlight: 2, healthDeadline: '10m', waves: [{ selector: { matchLabels: { tier: 'nobody' } } }, { selector: { matchLabels: { tier: 'canary' } } }] } }))
  const moving = await eventually('two canaries in flight', async () => {
    const s = await rollout('deleted')
    return s.members?.filter((m) => m.state === 'moving').length === 2 ? s : undefined
  })
  t.equal(moving.wave, '2/3', 'the first wave took nothing: the canaries are the second')
  t.same(moving.members?.map((m) => [m.memcached, m.state]), [['default/mc-00', 'moving'], ['default/mc-extra', 'moving'], ['team-a/mc-01', 'pending']])
  const pods = await eventually('mc-00 runs a pod of C that is never ready', async () => {
    const out = await kubectl(['get', 'pods', '-n', 'default', '-l', 'app.kubernetes.io/instance=mc-00', '-o', 'jsonpath={range .items[*]}{.spec.containers[0].image} {.status.phase} {.status.containerStatuses[0].ready}{"\\n"}{end}'])
    return /^memcached:unready Running false$/m.test(out) ? out : undefined
  })
  t.match(pods, /^memcached:1\.6\.38-alpine Running true$/m, 'the pod of the revision before serves meanwhile: the Deployment keeps it until the new one is ready')
  await user.delete({ ...MC, namespace: 'default', name: 'mc-extra' })
  await user.delete({ ...MC, namespace: 'team-a', name: 'mc-01' })
  const after = await eventually('the deleted CRs reported', async () => {
    const s = await rollout('deleted')
    return s.members?.filter((m) => m.message === 'deleted during the rollout').length === 2 ? s : undefined
  })
  t.same(after.members?.map((m) => [m.memcached, m.state]), [['default/mc-00', 'moving'], ['default/mc-extra', 'held'], ['team-a/mc-01', 'held']])
  t.equal((await cli(['rollout', 'abort', 'deleted'])).code, 0)
  await phase('deleted', 'Aborted')
  await eventually('mc-00 runs D again', async () => ((await user.get({ ...MC, namespace: 'default', name: 'mc-00' })).status as { chartRevision?: string } | undefined)?.chartRevision === nameD ? true : undefined)
})

t.test('a CR that stops being healthy while its wave bakes fails the wave; a CR a person pinned since is left to them', async (t) => {
  await kubectl(['apply', '-f', '-'], JSON.stringify({ ...RO, metadata: { name: 'bake' }, spec: { revision: nameE, bakeTime: '1h', healthDeadline: '60s', waves: [{ selector: { matchLabels: { tier: 'canary' } } }] } }))
  await eventually('the canary wave bakes', async () => (/bakes until/.test((await rollout('bake')).message ?? '') ? true : undefined), 60_000)
  // A person pins the only canary left to B while it bakes on E.
  await kubectl(['patch', 'mc', 'mc-00', '-n', 'default', '--type', 'merge', '-p', JSON.stringify({ spec: { chartRevision: nameB } })])
  await phase('bake', 'Halted')
  const s = await rollout('bake')
  t.match(s.message, /Memcached default\/mc-00 failed the health gate in wave 1\/2: healthy on memcached-[0-9a-f]+, then not during the bake/)
  t.match(s.members, [{ memcached: 'default/mc-00', state: 'held', from: nameD, message: new RegExp(`not returned: spec.chartRevision was set to ${nameB} by kubectl-patch since`) }])
  await eventually('mc-00 runs B, the person\'s pin', async () => ((await user.get({ ...MC, namespace: 'default', name: 'mc-00' })).status as { chartRevision?: string } | undefined)?.chartRevision === nameB ? true : undefined)
})

t.test('a CR of the wave that a person pins before it moves is held, not moved', async (t) => {
  await kubectl(['apply', '-f', '-'], JSON.stringify({ ...RO, metadata: { name: 'pinned-pending' }, spec: { revision: nameC, maxInFlight: 1, healthDeadline: '10m' } }))
  const first = await eventually('one CR in flight', async () => {
    const s = await rollout('pinned-pending')
    return s.members?.some((m) => m.state === 'moving') ? s : undefined
  })
  const next = first.members!.find((m) => m.state === 'pending')!
  const [namespace, name] = next.memcached.split('/') as [string, string]
  await kubectl(['patch', 'mc', name, '-n', namespace, '--type', 'merge', '-p', JSON.stringify({ spec: { chartRevision: nameD } })])
  const held = await eventually('held', async () => (await rollout('pinned-pending')).members?.find((m) => m.memcached === next.memcached && m.state === 'held'))
  t.equal(held.message, `pinned to ${nameD} by kubectl-patch`)
  t.equal((await cli(['rollout', 'abort', 'pinned-pending'])).code, 0)
  await phase('pinned-pending', 'Aborted')
})
