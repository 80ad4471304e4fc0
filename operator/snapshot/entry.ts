/**
 * The entry of the start-up snapshot of `render`: build.ts bundles this file and runs it under
 * `node --build-snapshot` (MEMCACHED_OPERATOR_SNAPSHOT_INPUTS names the bundled files); node then
 * writes the heap to a blob, and operator/cli/memcached-operator starts `render` from that blob,
 * skipping the loading and compiling of modules and chart: most of a short command's time.
 * See start.ts for what happens at each end.
 */
import { readFileSync } from 'node:fs'
import v8 from 'node:v8'
import { main, prepare, warmUp } from './start.ts'

const inputsFile = process.env.MEMCACHED_OPERATOR_SNAPSHOT_INPUTS
if (!inputsFile) throw new Error('build the snapshot with node operator/snapshot/build.ts')
const built = prepare(JSON.parse(readFileSync(inputsFile, 'utf8')) as string[])

warmUp().then(
  () => v8.startupSnapshot.setDeserializeMainFunction(() => void main(built)),
  (err: unknown) => {
    process.exitCode = 1
    throw err
  },
)
