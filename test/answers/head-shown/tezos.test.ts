import { headShownByAnswers, heightAt, type LabelReads } from "../../support/head-shown.js";

// Octez at the head: the block's metadata (taquito's getBlockMetadata: level_info.level) and the current
// level (helpers/current_level: level) say the level they were read at.

const H = 8_000_000;
const header = async ({ get }: LabelReads) => heightAt(await get("/chains/main/blocks/head/header"), "level");

headShownByAnswers(
  "xtz",
  H,
  {
    "GET /chains/main/blocks/head/metadata": {
      result: ({ height }) => ({
        protocol: "PsParisCZo7KAh1Z1smVd9ZMZ1HHn5gkzbM94V3PLCpknFWhUAi",
        next_protocol: "PsParisCZo7KAh1Z1smVd9ZMZ1HHn5gkzbM94V3PLCpknFWhUAi",
        level_info: {
          level: height,
          level_position: height - 1,
          cycle: 800,
          cycle_position: 1,
          expected_commitment: false,
        },
      }),
    },
    "GET /chains/main/blocks/head/helpers/current_level": {
      result: ({ height }) => ({
        level: height,
        level_position: height - 1,
        cycle: 800,
        cycle_position: 1,
        expected_commitment: false,
      }),
    },
  },
  [
    [
      "the head's metadata",
      header,
      async ({ get }) => heightAt(await get("/chains/main/blocks/head/metadata"), "level_info", "level"),
    ],
    [
      "the current level",
      header,
      async ({ get }) => heightAt(await get("/chains/main/blocks/head/helpers/current_level"), "level"),
    ],
  ],
);
