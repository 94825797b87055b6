//! `bursar limits`: what the session named by its capability token (`BURSAR_CAPABILITY_TOKEN`)
//! may still spend, and under which rules, as the relayer answers `GET /v1/limits` (JSON):
//! remaining deposit, this period's budget and when it refills, caps, co-sign threshold, the
//! counterparties it may pay, expiry and lease; amounts in base units and in the token's units.

use std::time::Duration;

use crate::capability::Capability;

#[derive(clap::Args, Debug)]
pub(crate) struct LimitsArgs {
    #[command(flatten)]
    capability: Capability,
}

pub(crate) fn run(args: LimitsArgs) -> Result<(), String> {
    crate::support::block_on(async {
        let relayer = args.capability.relayer();
        let limits = relayer
            .get("/v1/limits", Duration::from_secs(30))
            .await
            .map_err(|e| e.to_string())?;
        println!("{limits:#}");
        Ok(())
    })
}
