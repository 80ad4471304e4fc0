/**
 * The entry of the start-up snapshot of `render`: build.ts bundles this file, and node
 * (`--experimental-sea-config`, with `useSnapshot`) runs the bundle to build the snapshot
 * (MEMCACHED_OPERATOR_SNAPSHOT_INPUTS names the bundled files) that goes into a copy of node;
 * operator/cli/memcached-operator starts `render` with that copy, skipping the loading and
 * compiling of modules and chart: most of a short command's time.
 * See start.ts for what happens at each end.
 */
import { readFileSync } from 'node:fs'
import v8 from 'node:v8'
import { main, prepare, warmUp } from './start.ts'

const inputsFile = process.env.MEMCACHED_OPERATOR_SNAPSHOT_INPUTS
if (!inputsFile) throw new Error('build the snapshot with node operator/snapshot/build.ts')
const built = prepare(JSON.parse(readFileSync(inputsFile, 'utf8')) as string[])

warmUp(undefined, built).then(
  () => v8.startupSnapshot.setDeserializeMainFunction(() => void main(built)),
  (err: unknown) => {
    process.exitCode = 1
    throw err
  },
)
