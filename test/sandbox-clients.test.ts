/**
 * The sandbox through real clients, for what the other client tests leave out: client-node's
 * CustomObjectsApi status patch and makeInformer across a dropped watch and a 410; kubectl's
 * `scale` of a custom resource, `patch --type=merge`, `wait --for=condition=Available` and
 * `get pods -w`.
 */
import * as k8s from '@kubernetes/client-node'
import { execFile, spawn } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { memcachedCRD } from '../operator/api/crd.ts'
import { loadChart } from '../operator/render/chart.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import type { KubeObject } from '../operator/sandbox/types.ts'
import { eventually } from './support/operator.ts'
import { kubectlPath } from './support/tools.ts'

const crd = memcachedCRD(loadChart()) as unknown as KubeObject
const mc = (name: string) => ({ apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached', metadata: { name, namespace: 'default' }, spec: { size: 2 } })

t.test('client-node: CustomObjectsApi patches a status; the main endpoint ignores status', async (t) => {
  const sb = await startSandbox({ controllers: false, installCRDs: [crd] })
  t.teardown(() => sb.close())
  const kc = new k8s.KubeConfig()
  kc.loadFromFile(sb.kubeconfigPath)
  const api = kc.makeApiClient(k8s.CustomObjectsApi)
  const base = { group: 'cache.example.com', version: 'v1alpha1', namespace: 'default', plural: 'memcacheds' }
  await api.createNamespacedCustomObject({ ...base, body: { ...mc('x'), status: { nodes: ['ignored'] } } })
  const created = (await api.getNamespacedCustomObject({ ...base, name: 'x' })) as { status?: unknown; metadata: { generation: number } }
  t.equal(created.status, undefined, 'status is dropped on create')
  await api.patchNamespacedCustomObjectStatus({ ...base, name: 'x', body: { status: { nodes: ['a', 'b'], replicas: 2 } } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch))
  const patched = (await api.getNamespacedCustomObject({ ...base, name: 'x' })) as { status: { nodes: string[] }; metadata: { generation: number } }
  t.same(patched.status.nodes, ['a', 'b'])
  t.equal(patched.metadata.generation, created.metadata.generation, 'a status write does not bump the generation')
  await api.patchNamespacedCustomObject({ ...base, name: 'x', body: { spec: { size: 3 }, status: { nodes: [] } } }, k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch))
  const both = (await api.getNamespacedCustomObject({ ...base, name: 'x' })) as { status: { nodes: string[] }; spec: { size: number }; metadata: { generation: number } }
  t.equal(both.spec.size, 3)
  t.same(both.status.nodes, ['a', 'b'], 'the main endpoint ignores status')
  t.equal(both.metadata.generation, created.metadata.generation + 1)
})

t.test('client-node: makeInformer (restarted on errors, as client-node needs) recovers from dropped watches and 410 Expired on resume', async (t) => {
  const sb = await startSandbox({ controllers: false, historyWindow: 5 })
  let stopped = false
  const kc = new k8s.KubeConfig()
  kc.loadFromFile(sb.kubeconfigPath)
  const core = kc.makeApiClient(k8s.CoreV1Api)
  const informer = k8s.makeInformer(kc, '/api/v1/namespaces/default/configmaps', () => core.listNamespacedConfigMap({ namespace: 'default' }))
  const seen = new Set<string>()
  const errors: unknown[] = []
  informer.on('add', (o) => seen.add(o.metadata!.name!))
  informer.on('error', (err) => {
    errors.push(err)
    // client-node's informer stops on errors other than 410: restart it, as the operator's own does.
    if (!stopped) setTimeout(() => void (stopped || informer.start()), 100)
  })
  await informer.start()
  t.teardown(async () => {
    stopped = true
    await informer.stop()
    await sb.close()
  })
  await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'before' } } })
  await eventually('the first add', () => (seen.has('before') ? true : undefined))
  // Cut the watch; while it is down, write more than the history window holds so that the resume is too old.
  sb.faults.set({ watchDropS: 0.2, expireOnResume: true })
  for (let i = 0; i < 10; i++) {
    await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: `during-${i}` } } })
    await new Promise((r) => setTimeout(r, 50))
  }
  await new Promise((r) => setTimeout(r, 300))
  sb.faults.set({})
  await eventually('every object in the cache after the relist', () => (informer.list().length === 11 ? true : undefined))
  t.same(informer.list().map((o) => o.metadata!.name).sort(), ['before', ...Array.from({ length: 10 }, (_, i) => `during-${i}`)].sort())
})

t.test('kubectl: scale a Memcached, patch --type=merge, wait for Available, get pods -w', async (t) => {
  const sb = await startSandbox({ podReadyDelayMs: 300, installCRDs: [crd] })
  t.teardown(() => sb.close())
  const kubectl = async (...args: string[]) => (await promisify(execFile)(kubectlPath(), ['--kubeconfig', sb.kubeconfigPath, ...args], { encoding: 'utf8' })).stdout
  const applyStdin = (text: string) =>
    new Promise<void>((resolve, reject) => {
      const p = spawn(kubectlPath(), ['--kubeconfig', sb.kubeconfigPath, 'apply', '--server-side', '-f', '-'])
      p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`kubectl apply exited ${code}`))))
      p.stdin.end(text)
    })
  await applyStdin(JSON.stringify(mc('cache')))
  t.match(await kubectl('scale', 'memcached/cache', '--replicas=5'), /memcached\.cache\.example\.com\/cache scaled/)
  t.equal(await kubectl('get', 'memcached', 'cache', '-o', 'jsonpath={.spec.size}'), '5')
  t.match(await kubectl('patch', 'memcached', 'cache', '--type=merge', '-p', '{"spec":{"memoryMB":128}}'), /patched/)
  t.equal(await kubectl('get', 'memcached', 'cache', '-o', 'jsonpath={.spec.memoryMB}'), '128')

  // get pods -w sees pods appear while a Deployment scales up.
  const watcher = spawn(kubectlPath(), ['--kubeconfig', sb.kubeconfigPath, 'get', 'pods', '-w', '--no-headers'])
  let out = ''
  watcher.stdout.on('data', (d: Buffer) => (out += d.toString()))
  t.teardown(() => watcher.kill())
  await applyStdin(JSON.stringify({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: 'default' }, spec: { replicas: 2, selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'web', image: 'nginx:1' }] } } } }))
  t.match(await kubectl('wait', '--for=condition=Available', 'deployment/web', '--timeout=30s'), /deployment\.apps\/web condition met/)
  await eventually('two pods in the watch output, Running', () => (out.split('\n').filter((l) => /^web-\S+\s+1\/1\s+Running/.test(l)).map((l) => l.split(/\s+/)[0]).filter((v, i, a) => a.indexOf(v) === i).length === 2 ? true : undefined))
  t.pass('kubectl get pods -w printed both pods as they became Running')
})
