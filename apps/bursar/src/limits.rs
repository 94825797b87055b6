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
        let c = &args.capability;
        let get = reqwest::Client::new().get(c.url("/v1/limits"));
        let limits = c.ask(get, Duration::from_secs(30)).await?;
        println!("{limits:#}");
        Ok(())
    })
}
