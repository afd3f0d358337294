"""The distributor: validates pushed streams per tenant and fans them out to ingesters."""
