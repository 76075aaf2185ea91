#!/usr/bin/env node
import { runAdmin } from "./admin.js";

// The operator CLI's entry on Node: dist/admin.js (npm run build), `npm run admin -- …`, and the tests' way
// of running it from source (node --import tsx src/control/cli.ts). admin.ts has the commands.
process.exitCode = await runAdmin(process.argv.slice(2));
