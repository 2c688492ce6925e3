"""The GPUStack Operator's API (api: groups, versions, resources, labels, the Setting) and the
typed records of its objects and the Pods it renders (records), as every other layer sees them."""
