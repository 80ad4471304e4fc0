/**
 * `diff` predicts what the operator does, not only what a dry-run apply shows: the objects it
 * would delete and re-create (a field the server will not change in place), the objects it would
 * leave alone (somebody else's), the prunes, and a machine-readable summary (`-o json`).
 */
import { writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import t from 'tap'
import { runCli } from '../operator/cli/program.ts'
import type { ObjectPrediction } from '../operator/fleet/diff-predict.ts'
import { captureIO } from './support/io.ts'
import { eventually, startBed } from './support/operator.ts'
import { tempDir } from './support/tmp.ts'

const root = resolve(import.meta.dirname, '..')
const sample = join(root, 'kustomize/samples/cache_v1alpha1_memcached.yaml')

interface Summary {
  differences: number
  memcacheds: { memcached: string; inCluster: boolean; error?: string; objects: ObjectPrediction[] }[]
}

const deployment = (s: Summary, name: string): ObjectPrediction => s.memcacheds.flatMap((m) => m.objects).find((o) => o.kind === 'Deployment' && o.name === name)!

/** A line of a unified diff that changes memcached's `-m` value (64 by default) in the pod template. */
const memoryArgChange = /^[-+] +- ['"]?(32|64|128)['"]?$/m

const actions = (s: Summary) => Object.fromEntries(s.memcacheds.flatMap((m) => m.objects.map((o) => [`${o.kind}/${o.namespace}/${o.name}`, `${o.action}${o.podsRestart ? ' (pods restart)' : ''}`])))

t.test('diff marks a Service that would be deleted and re-created (headless → cluster IP), as the operator then does', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  await bed.client.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'memcached-sample', namespace: 'default' }, spec: { size: 3 } })
  await eventually('applied', async () => ((await bed.client.list({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget' }, { namespace: 'default' })).items.length === 1 ? true : undefined))
  const kc = ['--kubeconfig', bed.sandbox.kubeconfigPath]

  const io = captureIO()
  t.equal(await runCli(['diff', '-f', sample, ...kc, '--set', 'service.headless=false'], io), 1, io.err())
  t.match(io.out(), /--- live\/v1\.Service\.default\.memcached-sample\n\+\+\+ recreated\/v1\.Service\.default\.memcached-sample\n/, 'marked as re-created, not merged')
  t.match(io.err(), /Memcached default\/memcached-sample: Service default\/memcached-sample would be deleted and re-created: spec\.clusterIP: the live Service is headless/)

  const json = captureIO()
  t.equal(await runCli(['diff', '-f', sample, ...kc, '--set', 'service.headless=false', '-o', 'json'], json), 1, json.err())
  const summary = JSON.parse(json.out()) as Summary
  t.equal(actions(summary)['Service/default/memcached-sample'], 'recreate')
  t.equal(actions(summary)['Deployment/default/memcached-sample'], 'none')
  t.match(summary.memcacheds[0]!.objects.find((o) => o.kind === 'Service')!.reason, /spec\.clusterIP/)

  // What the diff predicted is what the operator does.
  await bed.client.patch({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: 'default', name: 'memcached-sample' }, { spec: { service: { headless: false } } }, { type: 'merge' })
  await eventually('re-created with a cluster IP', async () => {
    const svc = await bed.client.get({ apiVersion: 'v1', kind: 'Service', namespace: 'default', name: 'memcached-sample' })
    const ip = (svc.spec as { clusterIP?: string }).clusterIP
    return ip !== undefined && ip !== 'None' ? true : undefined
  })
})

t.test('diff -o json: per CR and object, the action and whether pods restart; prunes too', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  await bed.client.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'memcached-sample', namespace: 'default' }, spec: { size: 3 } })
  await eventually('applied', async () => ((await bed.client.list({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget' }, { namespace: 'default' })).items.length === 1 ? true : undefined))
  const kc = ['--kubeconfig', bed.sandbox.kubeconfigPath]

  const none = captureIO()
  t.equal(await runCli(['diff', '-f', sample, ...kc, '-o', 'json'], none), 0, none.err())
  const same = JSON.parse(none.out()) as Summary
  t.equal(same.differences, 0)
  t.same([...new Set(Object.values(actions(same)))], ['none'])
  t.equal(same.memcacheds[0]!.inCluster, true)

  const scale = captureIO()
  t.equal(await runCli(['diff', '-f', sample, ...kc, '-o', 'json', '--set', 'size=1'], scale), 1, scale.err())
  t.equal(actions(JSON.parse(scale.out()) as Summary)['Deployment/default/memcached-sample'], 'update', 'replicas only: no pod restarts')
  t.equal(actions(JSON.parse(scale.out()) as Summary)['PodDisruptionBudget/default/memcached-sample'], 'prune')

  // A larger memoryMB alone: the operator resizes the pods in place (reconcile/resize.ts), the sandbox serving pods/resize.
  const memory = captureIO()
  t.equal(await runCli(['diff', '--all', ...kc, '-o', 'json', '--set', 'memoryMB=128'], memory), 1, memory.err())
  const grown = deployment(JSON.parse(memory.out()) as Summary, 'memcached-sample')
  t.equal(`${grown.action}${grown.podsRestart ? ' (pods restart)' : ''}`, 'update', 'the pod template is held: no pod restarts')
  t.match(grown.reason, /^memoryMB 64 -> 128: the pods are resized in place/)
  const text = captureIO()
  t.equal(await runCli(['diff', '--all', ...kc, '--set', 'memoryMB=128'], text), 1, text.err())
  t.match(text.err(), /Memcached default\/memcached-sample: Deployment default\/memcached-sample: memoryMB 64 -> 128: the pods are resized in place/)
  t.notMatch(text.out(), memoryArgChange, 'the diff does not change -m in the pod template')
  t.match(text.out(), /128/, 'the workload\'s reload annotation carries the new size')
  // A smaller one cannot be taken in place: the pods restart.
  const shrink = captureIO()
  t.equal(await runCli(['diff', '--all', ...kc, '-o', 'json', '--set', 'memoryMB=32'], shrink), 1, shrink.err())
  const shrunk = deployment(JSON.parse(shrink.out()) as Summary, 'memcached-sample')
  t.equal(`${shrunk.action}${shrunk.podsRestart ? ' (pods restart)' : ''}`, 'update (pods restart)', 'a shrink restarts the pods')
  t.match(shrunk.reason, /refuses to lower a running container's memory limit/)
  const shrinkText = captureIO()
  t.equal(await runCli(['diff', '--all', ...kc, '--set', 'memoryMB=32'], shrinkText), 1, shrinkText.err())
  t.match(shrinkText.out(), memoryArgChange, 'a shrink changes -m in the pod template')
  // A growth with another change of the pod template: the pods restart.
  const both = captureIO()
  t.equal(await runCli(['diff', '--all', ...kc, '-o', 'json', '--set', 'memoryMB=128', '--set', 'podAnnotations.x=y'], both), 1, both.err())
  const rolled = deployment(JSON.parse(both.out()) as Summary, 'memcached-sample')
  t.equal(`${rolled.action}${rolled.podsRestart ? ' (pods restart)' : ''}`, 'update (pods restart)')
  t.match(rolled.reason, /the pod template changes beyond memcached's memory/)

  const fresh = join(tempDir('mc-diff-'), 'new.yaml')
  writeFileSync(fresh, 'apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: newone, namespace: default}\nspec: {size: 1}\n')
  const created = captureIO()
  t.equal(await runCli(['diff', '-f', fresh, ...kc, '-o', 'json'], created), 1, created.err())
  const c = JSON.parse(created.out()) as Summary
  t.equal(c.memcacheds[0]!.inCluster, false)
  t.equal(actions(c)['Deployment/default/newone'], 'create')
})

t.test('diff predicts an ownership conflict (somebody else\'s Service with the CR\'s name) instead of failing on the server\'s refusal', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  // A Service with a cluster IP: the chart's headless one cannot be applied over it (spec.clusterIPs).
  await bed.client.create({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'foreign', namespace: 'default' }, spec: { selector: { app: 'other' }, ports: [{ name: 'http', port: 80 }] } })
  const file = join(tempDir('mc-diff-'), 'foreign.yaml')
  writeFileSync(file, 'apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: foreign, namespace: default}\nspec: {size: 1}\n')
  const kc = ['--kubeconfig', bed.sandbox.kubeconfigPath]
  const io = captureIO()
  t.equal(await runCli(['diff', '-f', file, ...kc], io), 1, io.err())
  t.notMatch(io.err(), /^error:/m)
  t.match(io.err(), /Memcached default\/foreign: Service default\/foreign exists and has no controller; it was not created by this Memcached and is left alone \(the operator would report OwnershipConflict\)/)
  t.notMatch(io.out(), /v1\.Service\.default\.foreign/, 'no diff of an object the operator will not touch')
  const json = captureIO()
  t.equal(await runCli(['diff', '-f', file, ...kc, '-o', 'json'], json), 1)
  t.equal(actions(JSON.parse(json.out()) as Summary)['Service/default/foreign'], 'conflict')

  // The operator says the same once the CR is there.
  await bed.client.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'foreign', namespace: 'default' }, spec: { size: 1 } })
  await eventually('OwnershipConflict', async () => {
    const cr = await bed.client.get({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: 'default', name: 'foreign' })
    const conds = ((cr as { status?: { conditions?: { reason: string }[] } }).status?.conditions ?? []).map((c) => c.reason)
    return conds.includes('OwnershipConflict') ? true : undefined
  })
  const after = captureIO()
  t.equal(await runCli(['diff', '-f', file, ...kc], after), 1)
  t.match(after.err(), /Service default\/foreign exists and has no controller/)
})

t.test('diff marks a StatefulSet the server refuses to change in place (its pods are replaced), or a conflict when it is opted out of re-creation', async (t) => {
  const bed = await startBed()
  t.teardown(() => bed.stop())
  await bed.client.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'sts', namespace: 'default' }, spec: { size: 1, workload: { kind: 'StatefulSet' } } })
  await eventually('applied', async () => ((await bed.client.list({ apiVersion: 'apps/v1', kind: 'StatefulSet' }, { namespace: 'default' })).items.length === 1 ? true : undefined))
  const file = join(tempDir('mc-diff-'), 'sts.yaml')
  writeFileSync(file, 'apiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: sts, namespace: default}\nspec: {size: 1, workload: {kind: StatefulSet}}\n')
  const kc = ['--kubeconfig', bed.sandbox.kubeconfigPath]
  const change = ['--set', 'workload.podManagementPolicy=OrderedReady']
  const io = captureIO()
  t.equal(await runCli(['diff', '-f', file, ...kc, ...change], io), 1, io.err())
  t.match(io.out(), /\+\+\+ recreated\/apps\.v1\.StatefulSet\.default\.sts\n/)
  t.match(io.err(), /StatefulSet default\/sts would be deleted and re-created: .*updates to statefulset spec for fields other than/)
  const json = captureIO()
  t.equal(await runCli(['diff', '-f', file, ...kc, ...change, '-o', 'json'], json), 1)
  t.equal(actions(JSON.parse(json.out()) as Summary)['StatefulSet/default/sts'], 'recreate (pods restart)')

  await bed.client.patch({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'default', name: 'sts' }, { metadata: { annotations: { 'memcached-operator.cache.example.com/recreate': 'never' } } }, { type: 'merge' })
  const never = captureIO()
  t.equal(await runCli(['diff', '-f', file, ...kc, ...change, '-o', 'json'], never), 1)
  const sts = (JSON.parse(never.out()) as Summary).memcacheds[0]!.objects.find((o) => o.kind === 'StatefulSet')!
  t.equal(sts.action, 'conflict')
  t.match(sts.reason, /not re-created: its annotation memcached-operator\.cache\.example\.com\/recreate is "never"/)
  const text = captureIO()
  t.equal(await runCli(['diff', '-f', file, ...kc, ...change], text), 1)
  t.match(text.err(), /StatefulSet default\/sts: .* \(not re-created: its annotation .* is "never"; delete it to let it be re-created\); the operator would report ImmutableField/)
  t.notMatch(text.out(), /StatefulSet\.default\.sts/, 'no diff: it is not changed')
})

t.test('diff: a larger memoryMB restarts the pods on a cluster that does not serve pods/resize, as the operator then does', async (t) => {
  const bed = await startBed({ sandbox: { podResize: false } })
  t.teardown(() => bed.stop())
  await bed.client.create({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name: 'noresize', namespace: 'default' }, spec: { size: 1 } })
  await eventually('applied', async () => ((await bed.client.list({ apiVersion: 'apps/v1', kind: 'Deployment' }, { namespace: 'default' })).items.length === 1 ? true : undefined))
  const kc = ['--kubeconfig', bed.sandbox.kubeconfigPath]
  const json = captureIO()
  t.equal(await runCli(['diff', '--all', ...kc, '-o', 'json', '--set', 'memoryMB=128'], json), 1, json.err())
  const d = deployment(JSON.parse(json.out()) as Summary, 'noresize')
  t.equal(`${d.action}${d.podsRestart ? ' (pods restart)' : ''}`, 'update (pods restart)')
  t.match(d.reason, /the cluster does not serve pods\/resize/)

  // The operator rolls the pods: the Deployment's template takes -m 128.
  await bed.client.patch({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', namespace: 'default', name: 'noresize' }, { spec: { memoryMB: 128 } }, { type: 'merge' })
  await eventually('the template takes -m 128', async () => {
    const dep = await bed.client.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name: 'noresize' })
    const args = (dep.spec as { template: { spec: { containers: { args?: string[] }[] } } }).template.spec.containers.flatMap((c) => c.args ?? [])
    return args[args.indexOf('-m') + 1] === '128' ? true : undefined
  })
})
