/**
 * The platform's overlays end to end: `run --overlays FILE` (the sample in kustomize/manager) against
 * the sandbox patches every Memcached's objects, and those its `memcachedSelector` picks, before
 * each CR's own overlays; a CR whose labels come to match is patched at once, with no spec change.
 */
import { join, resolve } from 'node:path'
import pino from 'pino'
import t from 'tap'
import { memcachedCRD } from '../operator/api/crd.ts'
import type { KubeObject } from '../operator/controller/client.ts'
import { startOperator } from '../operator/cli/run.ts'
import { loadChart } from '../operator/render/chart.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { captureIO } from './support/io.ts'
import { clientFor, eventually, runOptions } from './support/operator.ts'

type Any = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any
const root = resolve(import.meta.dirname, '..')
const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const

const sandbox = await startSandbox({ podReadyDelayMs: 10, installCRDs: [memcachedCRD(loadChart()) as unknown as KubeObject] })
t.teardown(() => sandbox.close())
const op = await startOperator({ ...runOptions(sandbox.kubeconfigPath), overlays: join(root, 'kustomize/manager/platform-overlays.yaml') }, captureIO(), pino({ level: 'silent' }))
t.teardown(() => op.stop())
const user = clientFor(sandbox, 'test-user/1', 'test-user')
t.teardown(() => user.close())
const deployment = (name: string) => user.get({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'default', name }).catch(() => undefined) as Promise<Any | undefined>

t.test('every Memcached gets the platform\'s overlays, before its own', async (t) => {
  await user.create({ ...MC, metadata: { name: 'plain', namespace: 'default' }, spec: { size: 1 } })
  const d = await eventually('the Deployment', () => deployment('plain'))
  t.same(d.spec.template.spec.tolerations, [{ key: 'cloud.example.com/spot', operator: 'Exists', effect: 'NoSchedule' }])
  t.equal(d.metadata.annotations?.['platform.example.com/owner'], undefined, 'not labelled team: not selected')
  await user.create({ ...MC, metadata: { name: 'own', namespace: 'default', labels: { team: 'a' } }, spec: { size: 1, overlays: [{ target: { kind: 'Deployment' }, jsonPatch: [{ op: 'test', path: '/spec/template/spec/tolerations/0/key', value: 'cloud.example.com/spot' }, { op: 'add', path: '/spec/template/spec/tolerations/-', value: { key: 'own', operator: 'Exists' } }] }] } })
  const own = await eventually('the Deployment', () => deployment('own'))
  t.same(own.spec.template.spec.tolerations.map((x: Any) => x.key), ['cloud.example.com/spot', 'own'], 'the CR\'s test saw the platform\'s toleration')
  t.equal(own.metadata.annotations?.['platform.example.com/owner'], 'caches', 'labelled team: selected')
  const svc = (await user.get({ apiVersion: 'v1', kind: 'Service', namespace: 'default', name: 'own' })) as Any
  t.equal(svc.metadata.annotations?.['platform.example.com/owner'], 'caches', 'every object its label selector matches')
})

t.test('a Memcached whose labels come to match is patched, with no change of its spec', async (t) => {
  await user.patch({ ...MC, namespace: 'default', name: 'plain' }, { metadata: { labels: { team: 'b' } } }, { type: 'merge' })
  const patched = await eventually('the annotation', async () => {
    const o = await deployment('plain')
    return o?.metadata.annotations?.['platform.example.com/owner'] === 'caches' ? o : undefined
  })
  t.equal(patched.spec.replicas, 1, 'the spec unchanged')
  await user.patch({ ...MC, namespace: 'default', name: 'plain' }, { spec: { size: 2 } }, { type: 'merge' })
  const d = await eventually('the new size', async () => {
    const o = await deployment('plain')
    return o?.spec.replicas === 2 ? o : undefined
  })
  t.equal(d.metadata.annotations?.['platform.example.com/owner'], 'caches', 'still selected')
})
