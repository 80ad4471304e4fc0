/**
 * The sandbox's CRD pruning and validation treat `__proto__`, `constructor` and `toString` as the
 * ordinary keys they are for the real API server (Go maps): unknown ones are pruned, and under
 * `additionalProperties` they are validated like any other key. Found by the hostile-input tests:
 * a lookup through the schema's prototype made them "known" properties and skipped validation.
 */
import t from 'tap'
import type { KubeObject } from '../operator/controller/client.ts'
import { memcachedCRD } from '../operator/api/crd.ts'
import { loadChart } from '../operator/render/chart.ts'
import { ApiError } from '../operator/controller/client.ts'
import { startSandbox } from '../operator/sandbox/index.ts'
import { clientFor } from './support/operator.ts'

const MC = { apiVersion: 'cache.example.com/v1alpha1', kind: 'Memcached' } as const
const body = (specJson: string) => JSON.parse(`{"apiVersion":"${MC.apiVersion}","kind":"${MC.kind}","metadata":{"name":"p","namespace":"default"},"spec":${specJson}}`) as KubeObject

t.test('prototype-named keys are ordinary keys to CRD pruning and validation', async (t) => {
  const sb = await startSandbox({ controllers: false, installCRDs: [memcachedCRD(loadChart()) as unknown as KubeObject] })
  t.teardown(() => sb.close())
  const c = clientFor(sb, 'test-user/1', 'test-user')
  t.teardown(() => c.close())

  const stored = await c.create(body('{"size":1,"__proto__":{"x":1},"constructor":{"y":2},"toString":"z","unknown":1}'), { dryRun: true })
  t.same(Object.keys(stored.spec as object).sort(), ['size'], 'unknown prototype-named fields are pruned like any unknown field')

  const err = await c.create(body('{"size":1,"podLabels":{"__proto__":{"polluted":"yes"},"constructor":7}}'), { dryRun: true }).catch((e: unknown) => e)
  t.ok(err instanceof ApiError && err.status === 422, 'a label map whose __proto__ value is not a string is refused')
  t.match((err as ApiError).message, /spec\.podLabels\.__proto__: Invalid value: "object": spec\.podLabels\.__proto__ in body must be of type string/)
  t.match((err as ApiError).message, /spec\.podLabels\.constructor: Invalid value: "integer": spec\.podLabels\.constructor in body must be of type string/)
  t.equal(({} as Record<string, unknown>).polluted, undefined)
})
