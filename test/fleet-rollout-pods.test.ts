/**
 * A rollout's failed health gate says why the pods fail, as the kubelet reports it: revisions whose
 * image cannot be pulled, or crash-loops, halt in their first wave with the container's waiting
 * reason (ImagePullBackOff, CrashLoopBackOff and its restarts) in the Rollout's status and its
 * HealthGateFailed event, read with real kubectl; the sandbox's kubelet fails the images by its
 * pod-failure rules (sandbox/controllers/pod-failures.ts). Then how a pod's status is told
 * (fleet/rollout-pods.ts), on statuses in the shape a kubelet writes them (core/v1 ContainerStatus:
 * pkg/kubelet/kubelet_pods.go convertToAPIContainerStatuses), and the bounds of the message.
 */
import t from 'tap'
import { parse } from 'yaml'
import { runCli } from '../operator/cli/program.ts'
import { containerWhy, podSelector, podsWhy, podWhy, type PodView } from '../operator/fleet/rollout-pods.ts'
import { MC, RO, startFleetBed, valuesRevision, type RoStatus } from './support/fleet.ts'
import { captureIO } from './support/io.ts'
import { eventually } from './support/operator.ts'

const { sandbox, user, kubectl, push } = await startFleetBed(t, {
  sandbox: {
    podFailures: [
      { image: '^registry\\.invalid/', failure: 'ImagePull' },
      { image: ':crash$', failure: 'CrashLoop' },
    ],
  },
})

/** A revision of the bundled chart with `from` replaced by `to` in values.yaml, pushed. */
const revision = (from: string, to: string): Promise<string> => push(valuesRevision(from, to))
/** The Rollout as `kubectl get rollout NAME -o yaml` prints it, once it halted. */
async function halted(name: string): Promise<RoStatus> {
  return eventually(`rollout ${name} halted`, async () => {
    const s = (parse(await kubectl(['get', 'rollout', name, '-o', 'yaml'])) as { status?: RoStatus }).status
    return s?.phase === 'Halted' ? s : undefined
  }, 60_000)
}
const gateEvent = async (name: string) => kubectl(['get', 'events', '-n', 'default', '--field-selector', `involvedObject.kind=Rollout,involvedObject.name=${name},reason=HealthGateFailed`, '-o', 'jsonpath={.items[*].message}'])

// Three CRs of size 1 on the operator's own chart; one canary.
for (const [i, name] of ['mc-a', 'mc-b', 'mc-c'].entries()) await user.create({ ...MC, metadata: { name, namespace: 'default', labels: i === 0 ? { tier: 'canary' } : {} }, spec: { size: 1 } })
await eventually('the fleet is ready', async () => {
  const crs = (await user.list(MC)).items as unknown as { status?: { chartRevision?: string; conditions?: { type: string; status: string }[] } }[]
  return crs.length === 3 && crs.every((cr) => cr.status?.chartRevision !== undefined && cr.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) ? true : undefined
}, 60_000)
const spec = (revision: string) => ({ revision, healthDeadline: '3s', waves: [{ name: 'canary', selector: { matchLabels: { tier: 'canary' } } }] })

t.test('a revision whose image cannot be pulled halts in its first wave, the Rollout naming the pod and ImagePullBackOff', async (t) => {
  const rev = await revision('repository: memcached', 'repository: registry.invalid/memcached')
  await kubectl(['apply', '-f', '-'], JSON.stringify({ ...RO, metadata: { name: 'to-unpullable' }, spec: spec(rev) }))
  const s = await halted('to-unpullable')
  const pull = /pod mc-a-[a-z0-9]+-[a-z0-9]+: container memcached ImagePullBackOff \(Back-off pulling image "registry\.invalid\/memcached:1\.6\.38-alpine"\)/
  t.match(s.message, /^Memcached default\/mc-a failed the health gate in wave 1\/2: not Ready and Available on memcached-[0-9a-f]+ within 3s: /)
  t.match(s.message, pull, 'status.message says why the pod fails, as the kubelet reports it')
  t.match(s.conditions?.find((c) => c.type === 'Halted'), { status: 'True', reason: 'HealthGateFailed', message: pull })
  t.match(s.members, [{ memcached: 'default/mc-a', state: 'returned', message: pull }])
  t.match(await gateEvent('to-unpullable'), pull, 'and the HealthGateFailed event')
})

t.test('a revision whose container crash-loops halts with CrashLoopBackOff, its restarts and its last exit code', async (t) => {
  const rev = await revision('tag: 1.6.38-alpine', 'tag: crash')
  await kubectl(['apply', '-f', '-'], JSON.stringify({ ...RO, metadata: { name: 'to-crashing' }, spec: spec(rev) }))
  const s = await halted('to-crashing')
  const crash = /pod mc-a-[a-z0-9]+-[a-z0-9]+: container memcached CrashLoopBackOff, [1-9]\d* restarts?, last exit code 1 \(Error\)/
  t.match(s.message, crash)
  t.match(s.conditions?.find((c) => c.type === 'Halted'), { reason: 'HealthGateFailed', message: crash })
  t.match(await gateEvent('to-crashing'), crash)
  const status = await runCli(['rollout', 'status', 'to-crashing', '--kubeconfig', sandbox.kubeconfigPath], captureIO())
  t.equal(status, 1, 'rollout status exits 1 on a halted rollout')
})

// Statuses as a kubelet writes them.
const pod = (name: string, status: PodView['status'], deleting = false): PodView => ({ metadata: { name, ...(deleting ? { deletionTimestamp: '2026-12-01T00:00:00Z' } : {}) }, status })
const notReady = [{ type: 'Ready', status: 'False', reason: 'ContainersNotReady', message: 'containers with unready status: [memcached]' }]
const crashing = pod('a-1', {
  phase: 'Running',
  conditions: notReady,
  containerStatuses: [
    { name: 'memcached', ready: false, restartCount: 4, state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 1m20s restarting failed container=memcached pod=a-1_default(…)' } }, lastState: { terminated: { exitCode: 137, reason: 'OOMKilled' } } },
    { name: 'exporter', ready: true, restartCount: 0, state: { running: { startedAt: '2026-12-01T00:00:00Z' } } },
  ],
})
const pulling = pod('a-2', { phase: 'Pending', conditions: notReady, containerStatuses: [{ name: 'memcached', ready: false, restartCount: 0, state: { waiting: { reason: 'ErrImagePull', message: `failed to pull and unpack image "docker.io/library/memcached:nope": ${'x'.repeat(300)}` } } }] })
const unready = pod('a-3', { phase: 'Running', conditions: notReady, containerStatuses: [{ name: 'memcached', ready: false, restartCount: 0, state: { running: { startedAt: '2026-12-01T00:00:00Z' } } }] })
const ready = pod('a-0', { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], containerStatuses: [{ name: 'memcached', ready: true, restartCount: 0, state: { running: {} } }] })

t.test("a pod's status is told by its containers that are not ready: the waiting reason, a crash loop's restarts and last exit, running and not ready", async (t) => {
  t.equal(podWhy(crashing), 'container memcached CrashLoopBackOff, 4 restarts, last exit code 137 (OOMKilled)', 'the ready sidecar is not named')
  t.match(podWhy(pulling), /^container memcached ErrImagePull \(failed to pull and unpack image "docker\.io\/library\/memcached:nope": x+…\)$/)
  t.ok(podWhy(pulling)!.length < 220, 'a long runtime message is cut')
  t.equal(podWhy(unready), 'container memcached running, not ready')
  t.equal(podWhy(ready), undefined)
  t.equal(containerWhy({ name: 'm', ready: false, restartCount: 1, state: { running: {} } }), 'running, not ready (1 restart)')
  const unscheduled = pod('a-4', { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes are available: 3 Insufficient memory.' }] })
  t.equal(podWhy(unscheduled), 'not scheduled (Unschedulable: 0/3 nodes are available: 3 Insufficient memory.)')
  const init = pod('a-5', { phase: 'Pending', conditions: notReady, initContainerStatuses: [{ name: 'setup', ready: false, restartCount: 2, state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { exitCode: 1, reason: 'Error' } } }], containerStatuses: [{ name: 'memcached', ready: false, state: { waiting: { reason: 'PodInitializing' } } }] })
  t.equal(podWhy(init), 'init container setup CrashLoopBackOff, 2 restarts, last exit code 1 (Error), container memcached PodInitializing')
})

t.test("a CR's pods: the ready and the terminating ones are left out, a few are named and the rest counted", async (t) => {
  t.equal(podsWhy([ready]), undefined, 'every pod ready: nothing to say')
  t.equal(podsWhy([ready, unready, pod('a-9', unready.status, true)]), 'pod a-3: container memcached running, not ready')
  const many = ['e', 'd', 'c', 'b', 'a'].map((n) => pod(`p-${n}`, unready.status))
  t.equal(podsWhy(many), 'pod p-a: container memcached running, not ready; pod p-b: container memcached running, not ready; pod p-c: container memcached running, not ready; 2 more pods not ready')
})

t.test("the pods are those of the CR's status.selector, else the chart's instance label", async (t) => {
  t.equal(podSelector({ metadata: { name: 'x' }, status: { selector: 'app.kubernetes.io/instance=x,app.kubernetes.io/name=memcached' } }), 'app.kubernetes.io/instance=x,app.kubernetes.io/name=memcached')
  t.equal(podSelector({ metadata: { name: 'x' } }), 'app.kubernetes.io/instance=x')
  t.match(podSelector({ metadata: { name: 'n'.repeat(70) } }), /^app\.kubernetes\.io\/instance=n{54}-[0-9a-f]{8}$/, 'a long name as the chart shortens it for a label')
})
