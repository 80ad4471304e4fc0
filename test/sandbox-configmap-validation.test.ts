/**
 * ConfigMaps as kube-apiserver 1.34 validates them (kubernetes pkg/apis/core/validation/validation.go
 * ValidateConfigMap): the keys of data and binaryData are config-map keys, and no key is in both —
 * refused with 422 and upstream's field paths and messages, on create and on update.
 */
import t from 'tap'
import { createCluster } from '../operator/sandbox/index.ts'
import { call } from './support/sandbox-requests.ts'

const CM = '/api/v1/namespaces/default/configmaps'
const keyFormat = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
const cm = (fields: Record<string, unknown>) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, ...fields })

t.test('refused: a data key that is not a config key, a binaryData key too, and a key in both (ValidateConfigMap)', async (t) => {
  const c = createCluster()
  const r = call(c, `POST ${CM}`, cm({ data: { 'a b': '1', same: 'x' }, binaryData: { 'c/d': 'AA==', same: 'AA==' } }))
  t.equal(r.status, 422, JSON.stringify(r.body))
  t.same(r.body.details.causes.map((c: { field: string; message: string }) => [c.field, c.message]), [
    ['data[a b]', `Invalid value: "a b": ${keyFormat}`],
    ['binaryData[c/d]', `Invalid value: "c/d": ${keyFormat}`],
    ['binaryData[same]', 'Invalid value: "same": duplicate key in both data and binaryData'],
  ])
  t.match(r.body.message, /^ConfigMap "x" is invalid: \[data\[a b\]: Invalid value: "a b": /)
  t.equal(call(c, `GET ${CM}/x`).status, 404, 'nothing stored')
  const dots = call(c, `POST ${CM}`, cm({ data: { '..': '1' } }))
  t.same(dots.body.details.causes.map((c: { field: string; message: string }) => c.message), ['Invalid value: "..": must not be \'..\''])
})

t.test('accepted: valid keys in data and binaryData; an update to a bad key is refused', async (t) => {
  const c = createCluster()
  t.equal(call(c, `POST ${CM}`, cm({ data: { 'memcached.json': '{}', 'A_b-c': '' }, binaryData: { 'bin.dat': 'AA==' } })).status, 201)
  const r = call(c, `PUT ${CM}/x`, cm({ data: { 'no:colon': '1' } }))
  t.equal(r.status, 422)
  t.same(r.body.details.causes.map((c: { field: string }) => c.field), ['data[no:colon]'])
})
